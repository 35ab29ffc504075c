"""`frontdesk service install|uninstall --user|--system`: a systemd unit for the gateway.

--user writes a user unit (the per-user gateway, state and socket where clients look by default);
--system writes a system unit for the facility gateway (`serve --facility`, socket under /run/frontdesk,
state in /var/lib/frontdesk). The command writes or removes the file and prints the systemctl commands
to run; it never runs systemctl itself. It only replaces or removes a unit it wrote (or with --force).
KillMode=process in both: running jobs' shepherds outlive a gateway restart, as they do without systemd.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from frontdesk.cli.output import emit

__all__ = ["MARKER", "UNIT_NAME", "register", "render_unit", "unit_path"]

UNIT_NAME = "frontdesk.service"
MARKER = "# Written by `frontdesk service install`; `frontdesk service uninstall` removes it."
FACILITY_SOCKET = "/run/frontdesk/gateway.sock"
FACILITY_STATE = "/var/lib/frontdesk"

_USER = """{marker}
[Unit]
Description=frontdesk gateway for %u (per-user mode)

[Service]
Type=simple
ExecStart={exec_start}
{environment}Restart=on-failure
RestartSec=2
KillMode=process
UMask=0077

[Install]
WantedBy=default.target
"""

_SYSTEM = """{marker}
[Unit]
Description=frontdesk facility gateway (one gateway for every user)
After=network.target munge.service

[Service]
Type=simple
ExecStart={exec_start}
Environment=FRONTDESK_HOME={state}
RuntimeDirectory=frontdesk
RuntimeDirectoryMode=0755
StateDirectory=frontdesk
StateDirectoryMode=0700
Restart=on-failure
RestartSec=2
KillMode=process
UMask=0077

[Install]
WantedBy=multi-user.target
"""


def _quote(arg: str) -> str:
    """One ExecStart word, quoted the way systemd splits them (and % doubled: it starts a specifier)."""
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in " \t\"'\\;$"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$") + '"'


def render_unit(scope: str, program: list[str], socket: str | None = None, home: str | None = None) -> str:
    """The unit text for `scope` ("user" or "system"); `program` is the argv that runs `frontdesk`.

    `home`: the user's FRONTDESK_HOME at install time, so the unit's gateway keeps state where the user's
    clients look for it."""
    if scope == "user":
        argv = [*program, "serve", *(["--socket", socket] if socket else [])]
        environment = f"Environment={_quote('FRONTDESK_HOME=' + home)}\n" if home else ""
        return _USER.format(marker=MARKER, exec_start=" ".join(_quote(a) for a in argv), environment=environment)
    argv = [*program, "serve", "--facility", "--socket", socket or FACILITY_SOCKET]
    return _SYSTEM.format(marker=MARKER, exec_start=" ".join(_quote(a) for a in argv), state=FACILITY_STATE)


def unit_path(scope: str, directory: str | None = None) -> Path:
    """Where the unit goes: --dir, else the user's systemd directory or /etc/systemd/system."""
    if directory:
        return Path(directory) / UNIT_NAME
    if scope == "system":
        return Path("/etc/systemd/system") / UNIT_NAME
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user" / UNIT_NAME


def _program() -> list[str]:
    """How this installation runs `frontdesk`: its console script beside the interpreter, else `python -m`."""
    script = Path(sys.executable).parent / "frontdesk"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-P", "-m", "frontdesk.cli.main"]


def _next_steps(scope: str, action: str) -> list[str]:
    ctl = "systemctl --user" if scope == "user" else "systemctl"
    if action == "install":
        steps = [f"{ctl} daemon-reload", f"{ctl} enable --now {UNIT_NAME}"]
        if scope == "user":
            steps.append("loginctl enable-linger $USER   # optional: keep it running without a login session")
        return steps
    return [f"{ctl} disable --now {UNIT_NAME}   # first, if it is enabled", f"{ctl} daemon-reload"]


def register(sub: Any) -> None:
    """Add `service install` and `service uninstall`."""
    p = sub.add_parser("service", help="install or remove a systemd unit for the gateway")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, text in (("install", "write the unit"), ("uninstall", "remove the unit this command wrote")):
        v = verbs.add_parser(verb, help=text)
        scope = v.add_mutually_exclusive_group(required=True)
        scope.add_argument("--user", dest="scope", action="store_const", const="user", help="per-user gateway")
        scope.add_argument("--system", dest="scope", action="store_const", const="system", help="facility gateway")
        v.add_argument("--dir", help="write into this directory instead of systemd's")
        v.add_argument("--force", action="store_true", help="replace or remove a unit this command did not write")
        v.add_argument("--json", action="store_true")
        if verb == "install":
            v.add_argument("--socket", help="socket path (default: the per-user default, or " + FACILITY_SOCKET + ")")
        v.set_defaults(func=cmd_install if verb == "install" else cmd_uninstall)


def _check_ours(path: Path, force: bool) -> bool:
    """Whether a unit is already there; Conflict if it is someone else's (and not --force)."""
    from frontdesk.errors import Conflict

    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise Conflict(f"cannot read {path}: {exc.strerror}") from None
    if MARKER not in text and not force:
        raise Conflict(f"{path} exists and was not written by frontdesk (use --force to replace or remove it)")
    return True


def _need_root(args: argparse.Namespace) -> None:
    from frontdesk.errors import UserError

    if args.scope == "system" and not args.dir and os.geteuid() != 0:
        raise UserError("--system writes /etc/systemd/system: run it as root (or give --dir)")


def cmd_install(args: argparse.Namespace) -> int:
    """Write the unit (atomically, 0644) and print how to enable it."""
    from frontdesk.errors import UserError

    _need_root(args)
    if args.socket and not os.path.isabs(args.socket):
        raise UserError(f"--socket must be an absolute path, got {args.socket!r}")
    path = unit_path(args.scope, args.dir)
    replaced = _check_ours(path, args.force)
    home = os.environ.get("FRONTDESK_HOME") if args.scope == "user" else None
    text = render_unit(args.scope, _program(), args.socket, str(Path(home).absolute()) if home else None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
    steps = _next_steps(args.scope, "install")
    out = {"action": "install", "scope": args.scope, "path": str(path), "replaced": replaced, "next": steps}
    emit(args.json, out, lambda: f"wrote {path}\nthen run:\n" + "\n".join(f"  {s}" for s in steps))
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    """Remove the unit if this command wrote it; say what to run."""
    from frontdesk.errors import UserError

    _need_root(args)
    path = unit_path(args.scope, args.dir)
    removed = _check_ours(path, args.force)
    if removed:
        try:
            path.unlink()
        except OSError as exc:
            raise UserError(f"cannot remove {path}: {exc.strerror}") from None
    steps = _next_steps(args.scope, "uninstall")
    out = {"action": "uninstall", "scope": args.scope, "path": str(path), "removed": removed, "next": steps}
    emit(
        args.json,
        out,
        lambda: (
            (f"removed {path}" if removed else f"no unit at {path}")
            + "\nalso run:\n"
            + "\n".join(f"  {s}" for s in steps)
        ),
    )
    return 0
