"""`frontdesk doctor`: what is missing for reports to come back, per installed harness (issue 19, defect 5).

Checks, each with a one-line fix: the gateway answers; `frontdesk` resolves under a login shell (Codex
runs commands through one, and Debian's /etc/profile resets PATH); per harness found on PATH or with our
hooks in its settings: hooks installed (project or user), their commands resolve here, and for Codex the
project trusted, the hooks reviewed (or the bypass flag used) and the app-server daemon for live wakes.
Reads files and runs one login shell; changes nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from frontdesk.agents.harnesses import adapter, names
from frontdesk.agents.harnesses.base import is_ours

__all__ = ["Check", "codex_setup", "diagnose", "login_shell_finds", "render", "hook_commands"]


@dataclass(frozen=True)
class Check:
    """One finding: `ok` is True, False (something to fix), or None (cannot be known from outside)."""

    harness: str
    check: str
    ok: bool | None
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form."""
        return asdict(self)


def login_shell_finds(name: str, env: Mapping[str, str]) -> str | None:
    """Where a login shell finds `name` (Codex runs commands through one), or None."""
    from frontdesk import proc
    from frontdesk.errors import FrontdeskError

    shell = env.get("SHELL") if env.get("SHELL", "").endswith(("bash", "zsh", "/sh", "dash")) else "/bin/bash"
    try:
        res = proc.run([str(shell), "-lc", f"command -v {shlex.quote(name)}"], timeout=10, check=False, env=dict(env))
    except FrontdeskError:
        return None
    out = res.stdout.strip().splitlines()
    return out[-1] if res.returncode == 0 and out else None


def hook_commands(path: Path) -> list[str]:
    """frontdesk's hook commands in a harness settings file (empty when none or unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    out: list[str] = []
    for groups in hooks.values() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            for h in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_ours(h):
                    out.append(str(h["command"]))
    return out


def _resolves(cmd: str, which: Callable[[str], str | None]) -> tuple[bool, str]:
    if cmd.startswith("command -v frontdesk"):
        found = which("frontdesk")
        return found is not None, f"frontdesk from PATH ({found or 'not found'})"
    exe = shlex.split(cmd)[0]
    return os.access(exe, os.X_OK), exe


def _hooks(harness: str, binary: str, files: dict[str, Path], ctx: dict[str, Any]) -> list[Check]:
    found = {scope: hook_commands(p) for scope, p in files.items()}
    where = [f"{scope} {files[scope]}" for scope, cmds in found.items() if cmds]
    if not where:
        fix = f"frontdesk hooks install {harness} --project (in the project) or --user"
        return [Check(harness, "hooks", False, "no frontdesk hooks in " + " or ".join(map(str, files.values())), fix)]
    out = [Check(harness, "hooks", True, "installed: " + "; ".join(where))]
    cmds = [c for cs in found.values() for c in cs]
    bad = [d for ok, d in (_resolves(c, ctx["which"]) for c in cmds) if not ok]
    if bad:
        fix = "put frontdesk on PATH (pipx install / the venv's bin), or reinstall the hooks"
        out.append(Check(harness, "hooks-resolve", False, f"hook command not found: {bad[0]}", fix))
    else:
        out.append(Check(harness, "hooks-resolve", True, f"{len(cmds)} hook commands resolve"))
    return out


def _codex_config(codex_home: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((codex_home / "config.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def codex_setup(project: Path, env: Mapping[str, str]) -> list[str]:
    """What `hooks install codex` cannot do itself, as steps to take (empty when all is in place)."""
    home = Path(env.get("HOME") or Path.home())
    codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
    checks = _codex_extra(project, codex_home, login_shell_finds("frontdesk", env))
    return [f"next ({c.check}): {c.fix}" for c in checks if c.ok is not True and c.fix]


def _codex_extra(project: Path, codex_home: Path, login_path: str | None) -> list[Check]:
    cfg = _codex_config(codex_home)
    projects = cfg.get("projects") if isinstance(cfg.get("projects"), dict) else {}
    entry = projects.get(str(project.resolve()), {}) if isinstance(projects, dict) else {}
    trusted = isinstance(entry, dict) and entry.get("trust_level") == "trusted"
    fix = (
        f"run `codex` once in {project} and trust it, or add to {codex_home}/config.toml: "
        f'[projects."{project.resolve()}"] trust_level = "trusted"'
    )
    out = [
        Check(
            "codex",
            "trust",
            trusted,
            f"project {project} {'trusted' if trusted else 'not trusted'}",
            None if trusted else fix,
        )
    ]
    state = (cfg.get("hooks") or {}).get("state") if isinstance(cfg.get("hooks"), dict) else None
    reviewed = isinstance(state, dict) and any("trusted_hash" in v for v in state.values() if isinstance(v, dict))
    review_fix = (
        "open Codex, `/hooks`, review and trust frontdesk's hooks "
        "(or `codex exec --dangerously-bypass-hook-trust` for vetted automation)"
    )
    out.append(
        Check(
            "codex",
            "hooks-reviewed",
            True if reviewed else None,
            "hook trust recorded in config.toml"
            if reviewed
            else "no hook trust recorded: `codex exec` skips untrusted hooks silently",
            None if reviewed else review_fix,
        )
    )
    out.append(
        Check(
            "codex",
            "login-path",
            login_path is not None,
            f"a login shell finds frontdesk at {login_path}"
            if login_path
            else "a login shell does not find frontdesk (Codex runs commands through one)",
            None if login_path else _login_fix(),
        )
    )
    out.append(_codex_daemon())
    return out


def _codex_daemon() -> Check:
    from frontdesk.agents.channels.codex_live import control_socket

    up = control_socket().exists()
    return Check(
        "codex",
        "daemon",
        True if up else None,  # optional: without it the hooks still deliver
        "app-server daemon running (live wake of idle threads)"
        if up
        else "no app-server daemon: idle threads are woken only at their next turn",
        None if up else "codex app-server daemon start",
    )


def _gemini_trust(project: Path, home: Path) -> Check:
    """Gemini CLI runs project hooks only in a trusted folder (`~/.gemini/trustedFolders.json`)."""
    try:
        trusted = json.loads((home / ".gemini" / "trustedFolders.json").read_text())
    except (OSError, ValueError):
        trusted = {}
    root = project.resolve()
    ok = isinstance(trusted, dict) and any(
        v == "TRUST_FOLDER"
        and (root == Path(k) or Path(k) in root.parents)
        or v == "TRUST_PARENT"
        and Path(k) in (root, *root.parents)
        for k, v in trusted.items()
    )
    if ok:
        return Check("gemini", "trust", True, f"folder {project} trusted: project hooks run")
    fix = f"open `gemini` in {project} once and trust the folder (project hooks are skipped until then)"
    return Check("gemini", "trust", False, f"folder {project} not trusted: Gemini skips its project hooks", fix)


def _login_fix() -> str:
    exe = shutil.which("frontdesk")
    if exe is None:
        return "install frontdesk where a login shell finds it (pipx install frontdesk)"
    return (
        f"mkdir -p ~/.local/bin && ln -sf {exe} ~/.local/bin/frontdesk (Debian's ~/.profile adds ~/.local/bin at login)"
    )


def diagnose(project: Path, env: Mapping[str, str], gateway_ok: tuple[bool, str]) -> list[Check]:
    """Every check for this project and user; the gateway's health is passed in (one client call)."""
    home = Path(env.get("HOME") or Path.home())
    codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
    path = env.get("PATH", os.defpath)
    ctx = {"which": lambda name: shutil.which(name, path=path)}
    ok, detail = gateway_ok
    checks = [Check("frontdesk", "gateway", ok, detail, None if ok else "frontdesk serve (or check FRONTDESK_SOCKET)")]
    login = login_shell_finds("frontdesk", env)
    for name in names():
        h = adapter(name)
        binary = h.binary
        files = {scope: h.settings_paths(scope, project, home)["hooks"] for scope in ("project", "user")}
        on_path = ctx["which"](binary)
        if on_path is None and not any(hook_commands(p) for p in files.values()):
            checks.append(Check(name, "installed", None, f"{binary} not on PATH and no frontdesk hooks: skipped"))
            continue
        checks.append(
            Check(
                name,
                "installed",
                on_path is not None,
                on_path or f"{binary} not on PATH",
                None if on_path else f"install {binary}",
            )
        )
        checks += _hooks(name, binary, files, ctx)
        if name == "codex":
            checks += _codex_extra(project, codex_home, login)
        if name == "gemini" and hook_commands(files["project"]):
            checks.append(_gemini_trust(project, home))
    return checks


def render(checks: list[Check]) -> str:
    """People's form: one line per check, its fix indented below."""
    mark = {True: "ok  ", False: "FAIL", None: "?   "}
    lines = []
    for c in checks:
        lines.append(f"{mark[c.ok]} {c.harness:<9} {c.check:<15} {c.detail}")
        if c.fix and c.ok is not True:
            lines.append(f"     {'':<9} {'':<15} fix: {c.fix}")
    bad = sum(c.ok is False for c in checks)
    lines.append("all set" if not bad else f"{bad} problem{'s' if bad != 1 else ''} to fix")
    return "\n".join(lines)
