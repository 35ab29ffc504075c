"""`frontdesk hooks install|uninstall claude|codex|gemini [--project|--user]`: merge our hooks into the
harness's settings without touching anything else, and undo it byte for byte. What to write where is
each harness adapter's (agents/harnesses/); this module owns the merge, the records and the undo.

Claude Code: `.claude/settings.json` (project) or `~/.claude/settings.json` (user).
Codex: `.codex/hooks.json` (project) or `$CODEX_HOME/hooks.json` (user, default `~/.codex`); with
`--user` also a top-level `notify = [...]` line in `$CODEX_HOME/config.toml` when none is set (never
replaced; Codex ignores `notify` in a project's config).

Install records the original bytes and the bytes it wrote (under FRONTDESK_HOME). Uninstall writes the
original bytes back when the file is still exactly as install left it; when someone edited it since, it
removes only frontdesk's entries and keeps the edits. Stdlib only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from frontdesk.agents.harnesses import adapter
from frontdesk.agents.harnesses.base import PORTABLE, HookPlan, hook_argv, hook_command, is_ours, portable
from frontdesk.agents.harnesses.claude import guard_entry
from frontdesk.errors import ConfigError

__all__ = [
    "HookPlan",
    "claude_entries",
    "codex_entries",
    "merge_hooks",
    "unmerge_hooks",
    "install",
    "uninstall",
    "target_paths",
    "hook_command",
    "is_ours",
    "portable",
    "PORTABLE",
    "guard_entry",
    "hook_argv",
]

_DEFAULT_PLAN = HookPlan()


def claude_entries(plan: HookPlan = _DEFAULT_PLAN, exe: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Our matcher groups per Claude Code event."""
    return adapter("claude").entries(plan, exe)


def codex_entries(plan: HookPlan = _DEFAULT_PLAN, exe: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Our matcher groups per Codex event (Codex has no async rewake: `notify` and resume cover idle)."""
    return adapter("codex").entries(plan, exe)


def merge_hooks(settings: dict[str, Any], ours: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A copy of `settings` with our groups added (an earlier install of ours is replaced, others kept)."""
    cleaned = unmerge_hooks(settings)
    hooks = cleaned.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("settings: 'hooks' is not an object; fix it before installing")
    for event, groups in ours.items():
        lst = hooks.setdefault(event, [])
        if not isinstance(lst, list):
            raise ConfigError(f"settings: hooks.{event} is not a list; fix it before installing")
        lst.extend(json.loads(json.dumps(groups)))
    return cleaned


def unmerge_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of `settings` without frontdesk's hooks; events and `hooks` left empty by that are dropped."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not is_ours(h)]
                if not inner and group["hooks"]:
                    continue
                group = {**group, "hooks": inner}
            kept.append(group)
        if kept or not groups:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


# -- files ----------------------------------------------------------------------------------------
def target_paths(harness: str, scope: str, project: Path | None = None) -> dict[str, Path]:
    """The files an install touches: {"hooks": path} and, for Codex, {"config": config.toml}."""
    return adapter(harness).settings_paths(scope, project or Path.cwd(), Path.home())


def _state_file(path: Path) -> Path:
    from frontdesk.paths import default_home

    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:20]
    return default_home() / "agents" / "installs" / f"{key}.json"


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.frontdesk-tmp")
    tmp.write_bytes(data)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


def _record(path: Path, original: bytes | None, written: bytes, created_dirs: list[str]) -> None:
    state = _state_file(path)
    if state.exists():  # a second install keeps the first original
        prev = json.loads(state.read_text())
        original_b64, created_dirs = prev["original"], prev["created_dirs"]
    else:
        original_b64 = base64.b64encode(original).decode() if original is not None else None
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(
        json.dumps(
            {
                "path": str(path),
                "original": original_b64,
                "created_dirs": created_dirs,
                "written_sha256": hashlib.sha256(written).hexdigest(),
            }
        )
    )


def _mkdirs(path: Path) -> list[str]:
    created = []
    for parent in reversed(path.parents):
        if not parent.exists():
            created.append(str(parent))
    path.parent.mkdir(parents=True, exist_ok=True)
    return created


def _install_json(path: Path, ours: dict[str, list[dict[str, Any]]]) -> str:
    original = path.read_bytes() if path.exists() else None
    try:
        current = json.loads(original) if original and original.strip() else {}
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}); fix it before installing") from None
    if not isinstance(current, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    data = (json.dumps(merge_hooks(current, ours), indent=2) + "\n").encode()
    created = _mkdirs(path)
    _write_atomic(path, data)
    _record(path, original, data, created)
    return f"installed frontdesk hooks ({', '.join(ours)}) into {path}"


_NOTIFY = re.compile(r"^\s*notify\s*=", re.M)


def _install_notify(path: Path, exe: str | None) -> str:
    original = path.read_bytes() if path.exists() else None
    text = original.decode() if original is not None else ""
    head = text.split("\n[", 1)[0] if not text.startswith("[") else ""
    if _NOTIFY.search(head):
        return f"{path}: a notify program is already set; left it alone (Codex idle signal not installed)"
    argv = hook_argv("notify", "codex", exe=exe)
    line = "notify = " + json.dumps(argv) + "  # frontdesk: tells the gateway when a turn ends\n"
    data = (line + text).encode()
    created = _mkdirs(path)
    _write_atomic(path, data)
    _record(path, original, data, created)
    return f"set Codex notify in {path}"


def _uninstall_file(path: Path, structural: Any) -> str:
    state = _state_file(path)
    if not state.exists():
        if not path.exists():
            return f"{path}: nothing to uninstall"
        before = path.read_bytes()
        after = structural(before)
        if after == before:
            return f"{path}: no frontdesk hooks found"
        _write_atomic(path, after)
        return f"removed frontdesk hooks from {path}"
    rec = json.loads(state.read_text())
    current = path.read_bytes() if path.exists() else b""
    if hashlib.sha256(current).hexdigest() == rec["written_sha256"]:
        if rec["original"] is None:
            path.unlink(missing_ok=True)
            for d in reversed(rec["created_dirs"]):
                try:
                    os.rmdir(d)
                except OSError:
                    break
        else:
            _write_atomic(path, base64.b64decode(rec["original"]))
        msg = f"restored {path} as it was before install"
    else:
        if path.exists():
            _write_atomic(path, structural(current))
        msg = f"{path} changed since install: removed only frontdesk's entries"
    state.unlink()
    return msg


def _strip_json(data: bytes) -> bytes:
    try:
        current = json.loads(data) if data.strip() else {}
    except ValueError:
        return data
    if not isinstance(current, dict):
        return data
    stripped = unmerge_hooks(current)
    return data if stripped == current else (json.dumps(stripped, indent=2) + "\n").encode()


def _strip_notify(data: bytes) -> bytes:
    lines = data.decode().splitlines(keepends=True)
    kept = [ln for ln in lines if not (ln.lstrip().startswith("notify") and "frontdesk" in ln)]
    return "".join(kept).encode()


def install(
    harness: str,
    scope: str = "project",
    project: Path | None = None,
    plan: HookPlan = _DEFAULT_PLAN,
    exe: str | None = None,
) -> list[str]:
    """Merge frontdesk's hooks into the harness settings; one message per file touched, then the steps left."""
    h = adapter(harness)
    paths = target_paths(harness, scope, project)
    if exe is None and scope == "project":
        exe = PORTABLE  # committed with the project: must not name this machine's virtualenv
    msgs = [_install_json(paths["hooks"], h.entries(plan, exe))]
    if h.name != "codex":
        return msgs
    if scope == "user":
        msgs.append(_install_notify(paths["config"], None if exe == PORTABLE else exe))
    else:  # Codex 0.171 ignores `notify` in a project's .codex/config.toml (it says so at start)
        msgs.append(
            "Codex reads `notify` only from the user's config.toml: run `frontdesk hooks install "
            "codex --user` for the turn-ended signal"
        )
    from frontdesk.agents.doctor import codex_setup  # issue 19: every step, done or printed

    steps = codex_setup(project or Path.cwd(), os.environ)
    return msgs + (steps or ["Codex: project trusted, frontdesk found by a login shell: nothing else to do"])


def uninstall(harness: str, scope: str = "project", project: Path | None = None) -> list[str]:
    """Remove what install added: the original bytes when untouched since, else only our entries."""
    paths = target_paths(harness, scope, project)
    out = [_uninstall_file(paths["hooks"], _strip_json)]
    if "config" in paths:
        out.append(_uninstall_file(paths["config"], _strip_notify))
    return out
