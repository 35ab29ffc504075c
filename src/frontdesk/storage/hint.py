"""The guard's note after a recursive grep/find/du over a shared filesystem: try `frontdesk fs` next time.

A Claude Code `PostToolUse` hook on the Bash tool (installed with the guard by `frontdesk hooks install`):
it reads the hook's input on stdin and, when the command that just ran walked a tree on a network or
parallel filesystem (NFS, Lustre, GPFS, CephFS, BeeGFS, SMB, FUSE: from /proc/self/mounts) or under a
prefix named in `FRONTDESK_FS_HINT_PREFIXES` (colon-separated), prints
`{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "<one line>"}}`, which Claude
Code adds to the model's context after the tool's result. Once per session and command kind (grep, find,
du): a marker file per (session, kind) under the user's cache directory. It never blocks and never fails
the tool: any problem means no note. It reads no file of the tree (a hint must not cost what it warns of).

    python -m frontdesk.storage.hint     # or `frontdesk fs hint`
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from dataclasses import dataclass

__all__ = ["Walk", "main", "note", "walks"]

SHARED_TYPES = frozenset(
    {"nfs", "nfs4", "lustre", "gpfs", "ceph", "beegfs", "cifs", "smb3", "smbfs", "afs", "9p", "panfs", "pvfs2",
     "orangefs", "wekafs", "glusterfs", "quobyte", "fuse", "fuseblk", "davfs"}
)  # fmt: skip
_CONTROL = frozenset({";", "&&", "||", "|", "&", "|&", "(", ")", "\n"})
_PREFIXES = frozenset({"sudo", "time", "nice", "command", "exec", "nohup", "timeout", "xargs"})
_GREP_VALUED = frozenset("efmABCd")
_GREP_LONG_VALUED = frozenset(
    {"--regexp", "--file", "--max-count", "--include", "--exclude", "--exclude-dir", "--context"}
)
_RG_VALUED = frozenset({"-e", "-f", "-g", "--glob", "-t", "--type", "-T", "-m", "-A", "-B", "-C", "-j", "--max-depth"})


@dataclass(frozen=True)
class Walk:
    """A recursive walk a command made: its kind (grep, find, du), the roots, and the `frontdesk fs` form."""

    kind: str
    roots: tuple[str, ...]
    instead: str


def _segments(command: str) -> list[list[str]]:
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|()\n")
    lex.whitespace_split = True
    out: list[list[str]] = [[]]
    for tok in lex:
        if tok in _CONTROL:
            out.append([])
        else:
            out[-1].append(tok)
    return [s for s in out if s]


def _grep(args: list[str]) -> tuple[bool, list[str], list[str]]:
    """(recursive, operands after the pattern, the arguments without -r/-R) of a grep command."""
    recursive, operands, kept, pattern_given = False, [], [], False
    it = iter(args)
    for a in it:
        if a in ("-r", "-R", "--recursive", "--dereference-recursive"):
            recursive = True
            continue
        if a.startswith("--"):
            kept.append(a)
            if a in _GREP_LONG_VALUED:
                kept.append(next(it, ""))
            pattern_given |= a.startswith(("--regexp", "--file"))
        elif a.startswith("-") and len(a) > 1:
            recursive |= "r" in a or "R" in a
            flags = a.replace("r", "").replace("R", "")
            if flags != "-":
                kept.append(flags)
            if flags[-1:] in _GREP_VALUED and flags != "-":
                kept.append(next(it, ""))
            pattern_given |= any(c in flags for c in "ef")
        else:
            kept.append(a)
            if pattern_given:
                operands.append(a)
            else:
                pattern_given = True
    return recursive, operands, kept


def _rg(args: list[str]) -> tuple[list[str], list[str]]:
    operands, pattern_given, it = [], False, iter(args)
    for a in it:
        if a in _RG_VALUED:
            pattern_given |= a in ("-e", "-f")
            next(it, "")
        elif not a.startswith("-"):
            if pattern_given:
                operands.append(a)
            pattern_given = True
    return operands, args


def walks(command: str) -> list[Walk]:
    """The recursive walks in a shell command line (every segment of a pipeline or list)."""
    try:
        segments = _segments(command)
    except ValueError:  # unbalanced quotes: not ours to judge
        return []
    out = []
    for argv in segments:
        while argv and ("=" in argv[0] and not argv[0].startswith("=") or os.path.basename(argv[0]) in _PREFIXES):
            argv = argv[1:]
        if not argv:
            continue
        tool, args = os.path.basename(argv[0]), argv[1:]
        if tool in ("grep", "egrep", "fgrep"):
            recursive, operands, kept = _grep(args)
            if recursive:
                out.append(Walk("grep", tuple(operands or ["."]), shlex.join(["frontdesk", "fs", "grep", *kept])))
        elif tool == "rg":
            operands, kept = _rg(args)
            out.append(Walk("grep", tuple(operands or ["."]), shlex.join(["frontdesk", "fs", "grep", *kept])))
        elif tool == "find":
            roots = []
            for a in args:
                if a.startswith(("-", "(", "!")) or a in (")", ","):
                    break
                roots.append(a)
            out.append(Walk("find", tuple(roots or ["."]), shlex.join(["frontdesk", "fs", "find", *args])))
        elif tool == "du":
            roots = [a for a in args if not a.startswith("-")]
            out.append(Walk("du", tuple(roots or ["."]), shlex.join(["frontdesk", "fs", "du", *args])))
    return out


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type), longest mount point first."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="surrogateescape") as fh:
            rows = [line.split()[1:3] for line in fh if len(line.split()) >= 3]
    except OSError:
        return []
    decoded = [(m.replace("\\040", " ").replace("\\011", "\t"), t) for m, t in rows]
    return sorted(decoded, key=lambda r: -len(r[0]))


def _under(path: str, top: str) -> bool:
    return top == "/" or path == top or path.startswith(top.rstrip("/") + "/")


def shared(path: str, mounts: list[tuple[str, str]], prefixes: list[str]) -> str | None:
    """What makes `path` shared: a configured prefix or the type of the filesystem it is on (None: local)."""
    for top in prefixes:
        if top and _under(path, top):
            return f"under {top}"
    for top, kind in mounts:
        if _under(path, top):
            base = kind.split(".", 1)[0]
            return f"{kind} at {top}" if base in SHARED_TYPES else None
    return None


def note(payload: dict[str, object], env: dict[str, str], mounts: list[tuple[str, str]]) -> tuple[str, str] | None:
    """(command kind, the one-line note) for a hook payload, or None when there is nothing to say."""
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    cwd = payload.get("cwd")
    if payload.get("tool_name") != "Bash" or not isinstance(command, str) or not isinstance(cwd, str):
        return None
    prefixes = [p for p in env.get("FRONTDESK_FS_HINT_PREFIXES", "").split(":") if p.startswith("/")]
    for walk in walks(command):
        for root in walk.roots:
            full = os.path.normpath(os.path.join(cwd, os.path.expanduser(root)))
            why = shared(full, mounts, prefixes)
            if why is not None:
                text = (
                    f"frontdesk: that {walk.kind} walked {full} on a shared filesystem ({why}), a metadata round trip "
                    f"per entry; `{walk.instead}` answers the same next to the data, cached, and within this "
                    f"session's metadata budget (docs: `frontdesk fs --help`)."
                )
                return walk.kind, text
    return None


def _first_time(session: str, kind: str, env: dict[str, str]) -> bool:
    """True once per (session, kind): creates a marker file atomically."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "frontdesk", "fs-hints")
    os.makedirs(d, mode=0o700, exist_ok=True)
    name = hashlib.sha256(f"{session}\0{kind}".encode()).hexdigest()[:32]
    try:
        os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def main() -> int:
    try:
        payload = json.loads(sys.stdin.read() or "{}")
        env = dict(os.environ)
        found = note(payload, env, _mounts()) if isinstance(payload, dict) else None
        if found is None or not _first_time(str(payload.get("session_id") or "-"), found[0], env):
            return 0
    except (ValueError, OSError):
        return 0  # a hint is never worth failing the tool over
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": found[1]}}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
