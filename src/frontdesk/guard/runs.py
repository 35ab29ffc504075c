"""What an invocation runs besides its own program: the script file it names, the tree an installer builds.

Pure: paths are resolved against the invocation's cwd and the `GuardContext`'s home; the taint store is
read through the context.
"""

from __future__ import annotations

import os

from frontdesk.guard import rules as rules_mod
from frontdesk.guard.model import GuardContext
from frontdesk.guard.shell import Invocation

__all__ = ["CODE_RUNNERS", "SHELL_RUNNERS", "script_of", "resolve", "tainted_exec"]

SHELL_RUNNERS = {"bash", "sh", "zsh", "dash", "ksh", "source", ".", "sbatch"}
CODE_RUNNERS = r"^(python[0-9.]*|perl|ruby|node|Rscript|julia|php)$"
_INSTALLERS = {
    "pip",
    "pip3",
    "uv",
    "pipx",
    "conda",
    "mamba",
    "npm",
    "yarn",
    "pnpm",
    "cargo",
    "go",
    "make",
    "cmake",
}


def script_of(inv: Invocation) -> tuple[str, str] | None:
    """(kind, path) of a script the invocation runs: kind 'shell' or 'code'."""
    prog = inv.program
    if not inv.argv:
        return None
    positional = [w for w in inv.args if not w.is_flag]
    later = _scheduled_file(inv)
    if later is not None:
        return later
    if prog in SHELL_RUNNERS and positional and inv.inline_code is None:
        return ("shell", positional[0].text)
    fed = next((w.text for op, w in inv.redirects if op == "<" and not w.dynamic and w.text), None)
    if fed and not positional and inv.stdin_text is None:  # bash < x.sh, python3 < x.py: the file is the code
        if prog in SHELL_RUNNERS - {"sbatch"}:
            return ("shell", fed)
        if rules_mod.rx(CODE_RUNNERS).match(prog):
            return ("code", fed)
    if rules_mod.rx(CODE_RUNNERS).match(prog) and inv.inline_code is None and positional and not inv.module:
        if "-m" in [w.text for w in inv.args]:
            return None
        return ("code", positional[0].text)
    argv0 = inv.argv[0].text
    if "/" in argv0 and not argv0.startswith(("/usr/", "/bin/", "/sbin/", "/opt/")):
        return (
            "shell" if argv0.endswith((".sh", ".bash")) or "." not in os.path.basename(argv0) else "code",
            argv0,
        )
    return None


def _scheduled_file(inv: Invocation) -> tuple[str, str] | None:
    """`crontab FILE` (kind 'crontab': a table of commands), `at -f FILE TIME`, `batch -f FILE` (shell)."""
    texts = [w.text for w in inv.args]
    if inv.program == "crontab":
        i = 0
        while i < len(texts) and texts[i].startswith("-") and texts[i] != "-":
            if texts[i] in ("-l", "-r", "-e", "-i"):
                return None  # lists, removes or edits: no table is installed from a file
            i += 2 if texts[i] == "-u" else 1
        return ("crontab", texts[i]) if i < len(texts) and texts[i] != "-" else None
    if inv.program in ("at", "batch"):
        for i, t in enumerate(texts):
            if t == "-f" and i + 1 < len(texts):
                return ("shell", texts[i + 1])
            if t.startswith("-f") and len(t) > 2:
                return ("shell", t[2:])
    return None


def resolve(path: str, ctx: GuardContext, cwd: str | None) -> str:
    """`path` as an absolute, normalised path (`~` is the context's home, relative to `cwd` or the context's)."""
    if path.startswith("~"):
        path = ctx.home + path[1:]
    return os.path.normpath(os.path.join(cwd or ctx.cwd, path))


def tainted_exec(inv: Invocation, ctx: GuardContext) -> str | None:
    """Where the script or source tree this invocation runs or installs came from, when that was tainted."""
    prog = inv.program
    candidates: list[str] = []
    script = script_of(inv)
    if script is not None:
        candidates.append(script[1])
    positional = [w for w in inv.args if not w.is_flag]
    if prog in _INSTALLERS:
        if positional and positional[0].text == "install":
            candidates += [w.text for w in positional[1:] if "/" in w.text or w.text == "."]
        texts = [w.text for w in inv.args]
        for flag in ("-e", "--editable", "-r", "--requirement"):
            if flag in texts and texts.index(flag) + 1 < len(texts):
                candidates.append(texts[texts.index(flag) + 1])
        if prog in ("make", "cmake", "cargo", "go") or (positional and positional[0].text in ("install", "build")):
            candidates.append(".")
    if prog.startswith("python") and positional and positional[0].text == "setup.py":
        candidates.append(".")
    for path in candidates:
        source = ctx.tainted(resolve(path, ctx, inv.cwd))
        if source:
            return source
    return None
