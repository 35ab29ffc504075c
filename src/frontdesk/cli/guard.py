"""`frontdesk guard check|hook|report`: the command guard from a shell, from an agent hook, and its summary.

Runs as a fresh process on every shell call of an agent, so only the stdlib and the guard are imported.
Exit codes of `guard check`: 0 allow, 1 ask, 2 deny, 64 bad input (an empty command, a bad flag), 78 a bad
`[guard]` configuration, 70 the guard itself failed. `guard hook` always exits 0 and answers with the
Claude Code PreToolUse JSON on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from frontdesk.cli.output import emit

__all__ = ["register", "cmd_check", "cmd_hook", "cmd_report", "hook_answer", "main", "EXIT_BAD_INPUT", "EXIT_CONFIG"]

EXIT_BAD_INPUT = 64  # EX_USAGE: never 2, which is a deny
EXIT_CONFIG = 78  # EX_CONFIG
EXIT_INTERNAL = 70  # EX_SOFTWARE
_MAX_COMMAND = 256 * 1024
_ROLES = ("login", "compute", "workstation")


def _guard_parser_class() -> Any:
    import argparse

    class GuardParser(argparse.ArgumentParser):
        """Usage errors of the guard's commands exit 64, not 2 (which `guard check` uses for deny)."""

        def error(self, message: str) -> Any:
            sys.stderr.write(f"frontdesk: {' '.join(message.split())}\n")
            raise SystemExit(EXIT_BAD_INPUT)

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            # Unknown flags would otherwise reach the top-level parser, which exits 2 (a deny's code).
            ns, extras = super().parse_known_args(args, namespace)
            if extras:
                self.error(f"unrecognized arguments: {' '.join(extras)}")
            return ns, extras

    return GuardParser


def register(sub: Any) -> None:
    """Add the guard commands."""
    p = sub.add_parser("guard", help="check commands before they run (rules, taint, secrets, services)")
    gsub = p.add_subparsers(dest="guard_command", metavar="SUBCOMMAND", parser_class=_guard_parser_class())

    c = gsub.add_parser(
        "check",
        help="check one command: frontdesk guard check [--json] -- CMD... (exit 0 allow, 1 ask, 2 deny, 64 bad input)",
    )
    c.add_argument("--json", action="store_true")
    c.add_argument("--cwd", help="directory the command would run in (default: here)")
    c.add_argument("--role", help="override the node role: login, compute or workstation")
    c.add_argument("--no-record", action="store_true", help="do not record fetched content as tainted")
    c.add_argument("cmd", nargs="...", help="the command (one quoted string, or words after --)")
    c.set_defaults(func=cmd_check)

    h = gsub.add_parser("hook", help="Claude Code PreToolUse hook: payload on stdin, decision JSON on stdout")
    h.add_argument("--json", action="store_true", help="(always JSON; accepted for symmetry)")
    h.add_argument(
        "--approve",
        action="store_true",
        help="answer 'allow' (skip the harness's own prompt) when no rule fires; default: no opinion",
    )
    h.set_defaults(func=cmd_hook)

    r = gsub.add_parser("report", help="summarise guard verdicts from the gateway's journal")
    r.add_argument("--json", action="store_true")
    r.add_argument("--since", type=int, default=0, help="only events after this sequence number")
    r.set_defaults(func=cmd_report)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])


def _command_text(words: list[str]) -> str:
    if words and words[0] == "--":
        words = words[1:]
    if len(words) == 1:
        return words[0]
    import shlex

    return shlex.join(words)


def _settings() -> Any:
    from frontdesk.config import load_settings

    return load_settings()


def _run_check(
    command: str, cwd: str | None, role: str | None, record: bool, session: str | None, source: str
) -> tuple[Any, Any]:
    import os

    from frontdesk.guard.checker import check
    from frontdesk.guard.context import context_from_settings
    from frontdesk.guard.model import NodeRole

    settings = _settings()
    environ = {**os.environ, **_claude_env_file(os.environ.get("CLAUDE_ENV_FILE"))}
    ctx = context_from_settings(settings, environ, cwd=cwd)
    if role:
        ctx.node_role = NodeRole(role)
    verdict = check(command, ctx)
    if record:
        _record(settings, command, verdict, session, ctx.cwd, source)
    return verdict, (settings, ctx)


def _role_notice(settings: Any, ctx: Any) -> str | None:
    """Once per frontdesk home: say that nothing told the guard where it runs (it checks as a workstation)."""
    if ctx.role_source != "default":
        return None
    from pathlib import Path

    marker = Path(settings.home) / "guard" / "role-notice-shown"
    if marker.exists():
        return None
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        return None
    return (
        "frontdesk guard: the node role is not set (no FRONTDESK_NODE_ROLE, SLURM_JOB_ID, [guard] node_role or "
        "login_hosts), so commands are checked as on a workstation; set it on login and compute nodes"
    )


def _claude_env_file(path: str | None) -> dict[str, str]:
    """Variables Claude Code exports into every Bash command (but not into hooks) from CLAUDE_ENV_FILE."""
    if not path:
        return {}
    out: dict[str, str] = {}
    try:
        import shlex

        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh.read(65536).splitlines():
                words = shlex.split(line, comments=True) if line.strip() else []
                if words[:1] == ["export"]:
                    words = words[1:]
                for word in words:
                    name, eq, value = word.partition("=")
                    if eq and name.isidentifier():
                        out[name] = value
    except (OSError, ValueError):
        pass
    return out


def _record(settings: Any, command: str, verdict: Any, session: str | None, cwd: str, source: str) -> None:
    """Taint what the command fetches; append asks, denies and traced commands to the audit log."""
    from frontdesk.guard.audit import append_audit
    from frontdesk.guard.secrets import redact
    from frontdesk.guard.taint import TaintStore

    if verdict.fetches:
        store = TaintStore.open(settings.home)
        for path, source in verdict.fetches:
            store.record(path, redact(source), redact(command))
        store.save()
    if str(verdict.decision) != "allow":
        _tell_gateway(command, verdict, session, cwd, source)
    if str(verdict.decision) != "allow" or verdict.taint_source:
        append_audit(
            settings.home,
            {
                "ts": time.time(),
                "session": session,
                "cwd": cwd,
                "command": redact(command)[:500],
                **verdict.to_dict(),
            },
        )


def _tell_gateway(command: str, verdict: Any, session: str | None, cwd: str, source: str) -> None:
    """Best effort: put an ask or deny in the gateway's journal (skipped quickly when none runs)."""
    import os

    from frontdesk.guard.secrets import redact

    try:
        from frontdesk.client import Client

        body = {
            **verdict.to_dict(),
            "command": redact(command)[:500],
            "session": session,
            "cwd": cwd,
            "source": source,
        }
        client = Client(timeout=0.5, autostart=False)
        if not client.url and not os.path.exists(client.socket_path):
            return  # no gateway running: never start one from a guard check (the client would autostart it)
        client.request("POST", "/v1/guard/verdicts", body)
    except Exception:  # noqa: BLE001, S110 - no gateway (or an old one) must not slow or break a check
        pass


def _bad_input(args: argparse.Namespace, message: str, code: int = EXIT_BAD_INPUT) -> int:
    from frontdesk.cli.output import emit_error

    emit_error(bool(getattr(args, "json", False)), {"error": "bad_input", "message": message})
    return code


def cmd_check(args: argparse.Namespace) -> int:
    """`frontdesk guard check`: 0 allow, 1 ask, 2 deny; 64 bad input, 78 bad configuration, 70 guard failure."""
    from frontdesk.errors import ConfigError, FrontdeskError

    command = _command_text(list(args.cmd))
    if not command.strip():
        return _bad_input(args, "nothing to check: frontdesk guard check -- CMD ...")
    if "\0" in command or len(command) > _MAX_COMMAND:
        return _bad_input(args, f"not a shell command: NUL bytes or longer than {_MAX_COMMAND} characters")
    if args.role is not None and args.role not in _ROLES:
        return _bad_input(args, f"--role must be login, compute or workstation, got {args.role!r}")
    try:
        verdict, _ = _run_check(command, args.cwd, args.role, not args.no_record, None, "check")
    except ConfigError as exc:
        return _bad_input(args, exc.message, EXIT_CONFIG)
    except FrontdeskError as exc:
        return _bad_input(args, exc.message)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback, never an exit code that reads as a verdict
        return _bad_input(args, f"the guard failed: {type(exc).__name__}: {exc}", EXIT_INTERNAL)

    def text() -> str:
        if str(verdict.decision) == "allow":
            return "allow"
        line = f"{verdict.decision} [{verdict.rule}] {verdict.reason}"
        return line + (f"\n  instead: {verdict.alternative}" if verdict.alternative else "")

    emit(args.json, verdict.to_dict(), text)
    return int(verdict.decision.exit_code)


def hook_answer(payload: dict[str, Any], verdict: Any | None, approve: bool = False) -> dict[str, Any]:
    """The PreToolUse answer for one verdict (None: not a shell command, no opinion)."""
    if verdict is None or (str(verdict.decision) == "allow" and not approve):
        return {}
    out: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": str(verdict.decision)}
    if str(verdict.decision) == "allow":
        out["permissionDecisionReason"] = "frontdesk guard: no rule matched"
    else:
        reason = f"frontdesk guard [{verdict.rule}]: {verdict.reason}"
        if verdict.alternative:
            reason += f". Instead: {verdict.alternative}"
        out["permissionDecisionReason"] = reason
    return {"hookSpecificOutput": out}


SHELL_TOOLS = ("Bash", "bash", "shell", "exec_command", "local_shell", "shell_command")
"""Tool names whose input is a shell command (Claude Code's Bash; Codex's shell tools)."""


def _hook_command(payload: Any) -> str | None:
    """The shell command a PreToolUse payload asks to run; None for another tool; ValueError when unreadable."""
    if not isinstance(payload, dict):
        raise ValueError("the hook payload is not a JSON object")
    if payload.get("tool_name") not in SHELL_TOOLS:
        return None
    tool_input = payload.get("tool_input")
    given = tool_input.get("command", tool_input.get("cmd")) if isinstance(tool_input, dict) else None
    if isinstance(given, list) and given and all(isinstance(a, str) for a in given):
        import shlex

        return shlex.join(given)  # an argv (`bash -lc CMD`): the guard looks through the wrapper
    if not isinstance(given, str):
        raise ValueError(f"the {payload.get('tool_name')} tool's input has no command string")
    return given


def cmd_hook(args: argparse.Namespace) -> int:
    """`frontdesk guard hook`: never fails the harness; an unreadable payload or an internal error answers `ask`."""
    try:
        payload = json.loads(sys.stdin.read() or "{}")
        command = _hook_command(payload)
        verdict = None
        notice = None
        if command is not None:
            verdict, (settings, ctx) = _run_check(
                command, payload.get("cwd"), None, True, payload.get("session_id"), "hook"
            )
            notice = _role_notice(settings, ctx)
        answer = hook_answer(payload, verdict, approve=args.approve)
        if notice:
            answer["systemMessage"] = notice
    except Exception as exc:  # noqa: BLE001 - a broken guard must ask, not wedge or wave through
        answer = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": f"frontdesk guard failed: {_one_line(exc)}",
            }
        }
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


def _one_line(exc: Exception) -> str:
    """`ValueError: what` on one line, at most 200 characters (the harness shows it to the user)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())[:200]


def summarise(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of guard verdicts by decision, rule and principal, plus the latest few."""
    by_rule: dict[str, int] = {}
    by_decision: dict[str, int] = {}
    by_principal: dict[str, int] = {}
    for ev in events:
        data = ev.get("data") or {}
        rule = str(data.get("rule"))
        by_rule[rule] = by_rule.get(rule, 0) + 1
        dec = str(data.get("verdict"))
        by_decision[dec] = by_decision.get(dec, 0) + 1
        who = str(ev.get("principal") or "?")
        by_principal[who] = by_principal.get(who, 0) + 1
    latest = [
        {
            "seq": ev.get("seq"),
            "ts": ev.get("ts"),
            "principal": ev.get("principal"),
            "job_id": ev.get("job_id"),
            **{k: (ev.get("data") or {}).get(k) for k in ("verdict", "rule", "reason", "command")},
        }
        for ev in events[-10:]
    ]
    return {
        "total": len(events),
        "by_decision": by_decision,
        "by_rule": by_rule,
        "by_principal": by_principal,
        "latest": latest,
    }


def cmd_report(args: argparse.Namespace) -> int:
    """`frontdesk guard report`."""
    from frontdesk.client import Client

    raw = Client().request("GET", f"/v1/events?kind=guard.verdict&since={int(args.since)}")
    events = raw if isinstance(raw, list) else (raw or {}).get("events", [])
    summary = summarise([e for e in events if e.get("kind") == "guard.verdict"])

    def text() -> str:
        if not summary["total"]:
            return "no guard verdicts recorded"
        lines = [
            f"{summary['total']} guard verdicts: "
            + ", ".join(f"{k} {v}" for k, v in sorted(summary["by_decision"].items()))
        ]
        lines += [f"  {n:4d}  {rule}" for rule, n in sorted(summary["by_rule"].items(), key=lambda kv: -kv[1])]
        lines.append("latest:")
        lines += [
            f"  #{e['seq']} {e['verdict']} [{e['rule']}] {e['principal']}: {e['command'] or e['reason']}"
            for e in summary["latest"]
        ]
        return "\n".join(lines)

    emit(args.json, summary, text)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m frontdesk.cli.guard check|hook|report ...`: the guard alone, without loading every
    other command group (the hook runs on every shell call of an agent)."""
    from frontdesk.cli.output import emit_error
    from frontdesk.errors import FrontdeskError

    words = sys.argv[1:] if argv is None else argv
    if words and words[0] == "hook" and set(words[1:]) <= {"--approve", "--json"}:
        # the hot path (every shell call of an agent): no argparse to import or build
        return cmd_hook(SimpleNamespace(approve="--approve" in words, json=True))  # type: ignore[arg-type]
    import argparse

    parser = argparse.ArgumentParser(prog="frontdesk")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["guard", *words])
    try:
        return int(args.func(args) or 0)
    except FrontdeskError as exc:
        emit_error(bool(getattr(args, "json", False)), exc.to_payload())
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
