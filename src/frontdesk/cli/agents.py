"""Agent commands: `sessions`, `hooks install|uninstall`, `hook EVENT` (run by the harness), `mcp`, `doctor`.

Thin on purpose: stdlib + frontdesk.client at import; `hook` runs as a fresh process on every turn.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the agent commands to the top-level parser."""
    p = sub.add_parser("sessions", help="agent sessions with their running and unread jobs")
    p.add_argument("--all", action="store_true", help="every user's sessions (root and admins only)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sessions)
    from frontdesk.cli.campaigns import register_campaigns  # issue 18: show, resume, suspend, drain, list

    register_campaigns(p.add_subparsers(dest="sessions_cmd", metavar="ACTION"))

    h = sub.add_parser("hooks", help="install or remove frontdesk's hooks in Claude Code / Codex / Gemini CLI settings")
    hs = h.add_subparsers(dest="hooks_cmd", metavar="ACTION")
    for action in ("install", "uninstall"):
        a = hs.add_parser(action, help=f"{action} the hooks")
        a.add_argument("harness", help="claude, codex or gemini (or a harness a site package registers)")
        scope = a.add_mutually_exclusive_group()
        scope.add_argument(
            "--project", dest="scope", action="store_const", const="project", help="this project's settings (default)"
        )
        scope.add_argument(
            "--user", dest="scope", action="store_const", const="user", help="the user's settings (~/.claude, ~/.codex)"
        )
        a.add_argument("--dir", default=None, help="project directory (default: the current one)")
        if action == "install":
            a.add_argument(
                "--stop-timeout",
                type=int,
                default=900,
                help="seconds the Stop hook may hold a turn while jobs run (default 900)",
            )
            a.add_argument(
                "--no-guard",
                dest="guard",
                action="store_false",
                help="leave out the guard's PreToolUse hook on Bash (Claude Code)",
            )
        a.add_argument("--json", action="store_true")
        a.set_defaults(func=cmd_hooks, action=action, scope="project")
    h.set_defaults(func=lambda args: (h.print_help(), 2)[1], json=False)

    k = sub.add_parser("hook", help="run one hook (called by Claude Code / Codex, reads JSON on stdin)")
    from frontdesk.agents.hooks import EVENTS

    k.add_argument("event", help=f"one of {', '.join(sorted(EVENTS))}")  # checked by the hook: it fails open
    k.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        help="[--harness claude-code|codex] [--budget SECONDS] [PAYLOAD_JSON (Codex notify)]",
    )
    k.set_defaults(func=cmd_hook, json=False)

    m = sub.add_parser("mcp", help="serve the Model Context Protocol over stdio")
    m.set_defaults(func=cmd_mcp, json=False)

    d = sub.add_parser("doctor", help="what is missing for job reports to reach each installed agent harness")
    d.add_argument("--dir", default=None, help="project directory (default: the current one)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_doctor)


def _ago(ts: float | None) -> str:
    if not ts:
        return "-"
    s = max(0, int(time.time() - ts))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no agent sessions (they register from the hooks, the MCP server, or a job's session)"
    users = len({r.get("user") for r in rows}) > 1  # several users' rows (an admin's --all): each names its user
    head = ("SESSION", *(("USER",) if users else ()), "HARNESS", "STATE", "ACTIVE", "UNREAD", "CHANNEL", "SEEN", "CWD")
    lines = [head]
    for r in rows:
        lines.append(
            (
                r["id"][:13],
                *((str(r.get("user") or "-"),) if users else ()),
                r["harness"],
                r["turn_state"],
                str(r["running"]),
                str(r["unread"]),
                r.get("channel") or ("-" if r["turn_state"] == "ended" else "wait-hook"),
                _ago(r.get("last_seen_at")),
                r.get("cwd") or "-",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head) - 1)]
    out = ["  ".join(c.ljust(w) for c, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1] for line in lines]
    for r in rows:
        if r.get("last_reason"):
            out.append(f"  {r['id'][:13]}: {r['last_reason']}")
    return "\n".join(out)


def cmd_sessions(args: argparse.Namespace) -> int:
    """List the caller's sessions."""
    from frontdesk.cli.output import emit
    from frontdesk.client import Client

    rows = Client().request("GET", "/v1/sessions" + ("?all=true" if args.all else ""))
    emit(args.json, rows, lambda: _table(rows))
    return 0


def cmd_hooks(args: argparse.Namespace) -> int:
    """Install or uninstall the hooks of one harness."""
    from pathlib import Path

    from frontdesk.agents import install as inst
    from frontdesk.cli.output import emit

    project = Path(args.dir) if args.dir else None
    if args.action == "install":
        msgs = inst.install(
            args.harness, args.scope, project, inst.HookPlan(stop_timeout=args.stop_timeout, guard=args.guard)
        )
    else:
        msgs = inst.uninstall(args.harness, args.scope, project)
    emit(args.json, {"harness": args.harness, "scope": args.scope, "messages": msgs}, "\n".join(msgs))
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    """Run one hook for the harness (never fails the agent)."""
    from frontdesk.agents.hooks import main

    return main([args.event, *args.rest])


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout until the client closes it."""
    from frontdesk.mcp_server import serve

    serve()
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the gateway, the login-shell PATH and each harness's hooks; exit 1 when something must be fixed."""
    import os
    from pathlib import Path

    from frontdesk.agents.doctor import diagnose, render
    from frontdesk.autostart import allowed
    from frontdesk.cli.output import emit
    from frontdesk.client import Client
    from frontdesk.errors import FrontdeskError

    client = Client(timeout=3)
    os.environ["FRONTDESK_NO_AUTOSTART"] = "1"  # a diagnosis starts nothing
    try:
        client.health()
        gateway = (True, f"gateway answers at {client.url or client.socket_path}")
    except FrontdeskError as exc:
        os.environ.pop("FRONTDESK_NO_AUTOSTART")
        if client.socket_path and not client.url and allowed(client.socket_path):
            gateway = (True, "no gateway running; the first frontdesk command starts yours (autostart)")
        else:
            gateway = (False, f"gateway not reachable: {exc.message}")
    checks = diagnose(Path(args.dir or os.getcwd()), os.environ, gateway)
    ok = not any(c.ok is False for c in checks)
    emit(args.json, {"ok": ok, "checks": [c.to_dict() for c in checks]}, lambda: render(checks))
    return 0 if ok else 1
