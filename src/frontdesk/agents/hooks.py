"""The hook handlers that Claude Code and Codex run (`frontdesk hook <event>`). Stdlib + client only.

Each run is a fresh process: read the harness's JSON on stdin (Codex `notify` passes it as the last
argument), make one call to the gateway, print what the harness expects, acknowledge what was shown.
The forms `frontdesk hooks install` writes take the thin path (`thin_hook`: frontdesk.thin, no argparse,
json, socket, client or harness module; tests/unit/core/test_hot_path_imports.py): a harness's rendering is
imported only when the answer has something to show; anything else goes run_hook's way through client.Client.
Exact shapes (pinned in tests/unit/agents/test_hook_shapes.py):

- Stop (Claude Code and Codex): stdout `{"decision": "block", "reason": <report>}`, exit 0; nothing when
  there is nothing to deliver. With `stop_hook_active` it delivers only what is already there.
- rewake (Claude Code, installed with `"async": true, "asyncRewake": true`): the report on stderr, exit 2.
- SessionStart / UserPromptSubmit: stdout
  `{"hookSpecificOutput": {"hookEventName": <event>, "additionalContext": <reports + queue line>}}`.
- SessionEnd, notify: no output; they only tell the gateway the turn state.

A hook never breaks the agent: when the gateway is down or anything fails it exits 0 silently
(one line on stderr, which the harness shows only in verbose mode).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (a hook runs on every turn)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, NoReturn, TextIO

__all__ = ["EVENTS", "main", "run_hook", "reach_from_env", "render_output"]

_RESTART_GRACE_S = 120.0  # how long the background hook keeps asking a gateway that went away

EVENTS: dict[str, str] = {
    "stop": "Stop",
    "subagent-stop": "SubagentStop",
    "rewake": "rewake",
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "session-end": "SessionEnd",
    "notify": "notify",
    "plan": "PostToolUse",  # issue 18: after TodoWrite, the plan is checkpointed mid-turn
}


def reach_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """How the gateway may reach this session later: harness pid, tmux server and pane (no secrets)."""
    reach: dict[str, Any] = {}
    pid = env.get("CLAUDE_PID") or env.get("FRONTDESK_AGENT_PID")
    if pid and pid.isdigit():
        reach["pid"] = int(pid)
    if env.get("TMUX") and env.get("TMUX_PANE"):
        reach["tmux_socket"] = env["TMUX"].split(",", 1)[0]
        reach["tmux_pane"] = env["TMUX_PANE"]
    if env.get("CLAUDE_CODE_SESSION_ATTENDED") in ("0", "1"):  # 0 under `claude -p`: exits after its turn
        reach["attended"] = env["CLAUDE_CODE_SESSION_ATTENDED"] == "1"
    if env.get("CLAUDE_CODE_ENTRYPOINT"):
        reach["entrypoint"] = env["CLAUDE_CODE_ENTRYPOINT"]
    return reach


def render_output(harness: str, event: str, got: Mapping[str, Any]) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) for the harness, from the gateway's answer (its adapter's shapes)."""
    from frontdesk.agents.harnesses import for_harness
    from frontdesk.agents.harnesses.base import render_common

    h = for_harness(harness)
    return h.render(event, got) if h is not None else render_common(event, got)


def _write_env_file(env: Mapping[str, str], sid: str) -> None:
    path = env.get("CLAUDE_ENV_FILE")
    if not path:
        return
    line = f"export FRONTDESK_SESSION={sid}\n"
    try:
        with open(path, "a+", encoding="utf-8") as fh:
            fh.seek(0)
            if line not in fh.read():
                fh.write(line)
    except OSError:
        pass


def run_hook(
    name: str, harness: str, budget: float, payload: Mapping[str, Any], env: Mapping[str, str], client: Any
) -> tuple[str, str, int]:
    """Handle one hook run; returns (stdout, stderr, exit code). Raises FrontdeskError on gateway trouble."""
    event = EVENTS[name]
    from frontdesk.agents.harnesses import for_harness

    h = for_harness(harness)
    sid = (h.session_id(payload) if h is not None else None) or str(payload.get("session_id") or "")
    if not sid:
        return "", "frontdesk hook: no session id in the hook input\n", 0
    if event == "SessionStart":
        _write_env_file(env, sid)
    body = _body(event, harness, budget, payload, env)
    long_poll = event in ("Stop", "SubagentStop", "rewake")
    got = _call_hook(client, sid, body, event, budget, long_poll)
    out, err, code = render_output(harness, event, got)
    if got.get("delivery") and got.get("jobs"):
        _emit(out, err)
        client.request(
            "POST", f"/v1/sessions/{sid}/ack", {"jobs": got["jobs"], "channel": f"hooks:{event}"}, timeout=10
        )
        return "", "", code
    return out, err, code


def _body(
    event: str, harness: str, budget: float, payload: Mapping[str, Any], env: Mapping[str, str]
) -> dict[str, Any]:
    """What one hook call tells the gateway: the event, where the session runs, its turn and last known plan."""
    body = {
        "event": event,
        "harness": harness,
        "cwd": payload.get("cwd") or env.get("PWD"),
        "reach": {
            **reach_from_env(env),
            "host": os.uname().nodename,  # issue 18: where the campaign runs (drain --node)
            **({"transcript_path": payload["transcript_path"]} if payload.get("transcript_path") else {}),
        },
        "stop_hook_active": bool(payload.get("stop_hook_active")),
        "budget": budget,
    }
    turn_id = payload.get("prompt_id") or payload.get("turn_id")  # issue 18: the turn, named by the harness
    if (
        isinstance(turn_id, str)
        and 0 < len(turn_id) <= 200
        and turn_id.isascii()
        and turn_id.replace("-", "").isalnum()
    ):
        body["prompt_id"] = turn_id
    if event in ("Stop", "UserPromptSubmit", "SessionEnd", "PostToolUse"):  # issue 18: the last known plan
        from frontdesk.agents.campaign_plan import last_plan, plan_from_tool

        found = plan_from_tool(payload) if event == "PostToolUse" else last_plan(payload.get("transcript_path"))
        if found is not None:
            body["plan"], body["plan_source"] = found
    return body


def _call_hook(client: Any, sid: str, body: dict[str, Any], event: str, budget: float, long_poll: bool) -> Any:
    """One hook call; the background hook outlives a gateway restart by asking again until its budget."""
    import time

    from frontdesk.errors import FrontdeskError, UserError

    deadline = time.monotonic() + budget
    down_since: float | None = None
    while True:
        left = max(deadline - time.monotonic(), 0.0)
        try:
            got = client.request(
                "POST",
                f"/v1/sessions/{sid}/hook",
                {**body, "budget": left if long_poll else budget},
                timeout=(left + 30) if long_poll else 10,
            )
            if not (event == "rewake" and isinstance(got, dict) and got.get("stopping")):
                return got
            down_since = None
        except FrontdeskError as exc:  # down, restarting, or it broke off the long-poll while stopping
            if event != "rewake" or isinstance(exc, UserError) or exc.exit_code not in (1, 69):
                raise
            down_since = down_since or time.monotonic()
            if time.monotonic() - down_since > _RESTART_GRACE_S:
                raise
        if time.monotonic() + 2 > deadline:
            return {"delivery": None}
        time.sleep(2)  # the gateway is restarting: the session's reports are kept, ask again


def _emit(out: str, err: str, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
    so, se = stdout or sys.stdout, stderr or sys.stderr
    if out:
        so.write(out + ("" if out.endswith("\n") else "\n"))
        so.flush()
    if err:
        se.write(err)
        se.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """`frontdesk hook EVENT [--harness H] [--budget S] [PAYLOAD]`: run one hook; never fails the agent."""
    args = list(sys.argv[1:] if argv is None else argv)
    simple = _simple_args(args)  # the forms `frontdesk hooks install` writes: no argparse
    if simple is not None:
        return run_from_args(*simple)
    return _parsed_main(args)


def _simple_args(args: list[str]) -> tuple[str, str, float, str | None] | None:
    """(event, harness, budget, payload) of `EVENT [--harness H] [--budget N] [PAYLOAD]`, else None (argparse)."""
    if not args or args[0] not in EVENTS:
        return None
    harness, budget, payload = "claude-code", 600.0, None
    rest = args[1:]
    while rest:
        if rest[0] == "--harness" and len(rest) > 1:
            harness, rest = rest[1], rest[2:]
        elif rest[0] == "--budget" and len(rest) > 1 and rest[1].isascii() and rest[1].isdigit():
            budget, rest = float(rest[1]), rest[2:]
        elif len(rest) == 1 and payload is None and rest[0][:1] in ("{", "["):
            payload, rest = rest[0], []
        else:
            return None
    return args[0], harness, budget, payload


def _parsed_main(argv: list[str]) -> int:
    import argparse

    class FailOpen(argparse.ArgumentParser):
        """A bad hook command line (settings older or newer than this frontdesk) is one line and exit 0:
        exit 2 would make Claude Code block the Stop and feed the usage to the model, turn after turn."""

        def error(self, message: str) -> NoReturn:
            sys.stderr.write(f"frontdesk hook: {message}\n")
            raise SystemExit(0)

    p = FailOpen(prog="frontdesk hook")
    p.add_argument("event", choices=sorted(EVENTS))
    p.add_argument("--harness", default="claude-code")
    p.add_argument("--budget", type=float, default=600.0)
    p.add_argument("payload", nargs="?", help="the hook input as JSON (Codex notify passes it here)")
    args = p.parse_intermixed_args(argv)
    return run_from_args(args.event, args.harness, args.budget, args.payload)


_TEXT_FIELDS = ("session_id", "thread-id", "thread_id", "cwd", "transcript_path", "prompt_id", "turn_id", "tool_name")


def _checked(payload: Any, raw: str = "") -> dict[str, Any]:
    """The hook input, when it is an object whose fields we read have their types (else ValueError)."""
    if not isinstance(payload, dict):
        raise ValueError("hook input is not a JSON object")
    for key in _TEXT_FIELDS:
        value = payload.get(key)
        if value is not None and (not isinstance(value, str) or "\0" in value or len(value) > 4096):
            raise ValueError(f"hook input: {key} must be a string without NUL of at most 4096 characters")
    if not isinstance(payload.get("stop_hook_active", False), bool | None):
        raise ValueError("hook input: stop_hook_active must be true or false")
    try:  # bytes that are not UTF-8 came in as lone surrogates: they cannot go on to the gateway
        raw.encode()
        if "\\u" in raw:  # (an escaped lone surrogate: only an escape can make one)
            import json

            json.dumps(payload, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ValueError("hook input is not valid UTF-8") from None
    return payload


def run_from_args(event: str, harness: str, budget: float, payload_arg: str | None) -> int:
    """Read the input, call the gateway, print the answer; exit 0 on any trouble (fail open)."""
    from frontdesk.thin import parse_json

    if os.environ.get("FRONTDESK_HOOKS") == "off":  # issue 8: a turn the gateway started (headless resume)
        return 0
    try:
        raw = payload_arg if payload_arg is not None else (sys.stdin.read() if not sys.stdin.isatty() else "")
        payload = _checked(parse_json(raw) if raw.strip() else {}, raw)
        done = thin_hook(event, harness, budget, payload, os.environ)
        if done is None:
            return _full(event, harness, budget, payload)
    except (ValueError, OSError, RecursionError) as exc:
        return _failed(event, exc)
    _emit(*done[:2])
    return done[2]


_SESSION_KEYS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("claude-code", "claude", "claude_code", "gemini", "gemini-cli"), ("session_id",)),
    "codex": ("session_id", "thread-id", "thread_id"),
}
"""The built-in harnesses' session id in a hook's input (their adapters' session_id), for the thin path."""
_SILENT = ("Stop", "SubagentStop", "SessionEnd", "notify", "PostToolUse")
"""Events whose answer shows nothing unless it delivers reports (render_common)."""


def thin_hook(
    event: str, harness: str, budget: float, payload: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[str, str, int] | None:
    """One hook call through frontdesk.thin (no client, json, socket or harness module), as run_hook makes it;
    the harness's rendering is imported only when the answer has something to show. None: run_hook's way
    (a plug-in's harness, rewake's wait across restarts, a site config or URL, a socket that fails the checks)."""
    name, keys = EVENTS[event], _SESSION_KEYS.get(harness)
    if keys is None or name == "rewake":
        return None
    from frontdesk import thin

    sid = next((str(payload[k]) for k in keys if payload.get(k)), "")
    if not sid:
        return "", "frontdesk hook: no session id in the hook input\n", 0
    if not set(sid) <= thin.SESSION_CHARS:
        return None
    try:
        path = thin.socket_path()
    except thin.Fallback:
        return None
    if name == "SessionStart":
        _write_env_file(env, sid)
    long_poll = name in ("Stop", "SubagentStop")
    body = thin.dumps(_body(name, harness, budget, payload, env))
    try:
        got = thin.request(path, "POST", f"/v1/sessions/{sid}/hook", body, budget + 30 if long_poll else 10)
    except thin.Broken as exc:
        return "", f"frontdesk hook {event}: {exc}\n", 0
    except thin.Fallback as exc:  # (NotOk: the gateway's error answer, as client.Client raises it)
        why = _error_of(exc)
        return None if why is None else ("", f"frontdesk hook {event}: {why}\n", 0)
    if not isinstance(got, dict) or name in _SILENT and not got.get("delivery"):
        return "", "", 0
    out, err, code = render_output(harness, name, got)
    if not (got.get("delivery") and got.get("jobs")):
        return out, err, code
    _emit(out, err)
    ack = thin.dumps({"jobs": got["jobs"], "channel": f"hooks:{name}"})
    try:
        thin.request(path, "POST", f"/v1/sessions/{sid}/ack", ack, 10)
    except (thin.Fallback, thin.Broken) as exc:
        return "", f"frontdesk hook {event}: {_error_of(exc) or 'the acknowledgement did not reach the gateway'}\n", 0
    return "", "", code


def _error_of(exc: Exception) -> str | None:
    """The message of the gateway's error answer (errors.from_payload, as the full client raises it), else None."""
    from frontdesk import thin

    try:
        payload = thin.loads(exc.body) if isinstance(exc, thin.NotOk) and exc.body else None
    except thin.Fallback:
        return None
    if exc.__class__ is thin.Broken:
        return str(exc)
    if not isinstance(payload, dict) or "error" not in payload:
        return None
    from frontdesk.errors import from_payload

    return from_payload(payload).message


def _full(event: str, harness: str, budget: float, payload: dict[str, Any]) -> int:
    """The hook through client.Client: a site config, a URL or token, a harness registered by a plug-in, rewake."""
    from frontdesk.client import Client
    from frontdesk.errors import FrontdeskError

    try:
        out, err, code = run_hook(event, harness, budget, payload, os.environ, Client())
    except (FrontdeskError, ValueError, OSError, RecursionError) as exc:
        return _failed(event, exc)
    _emit(out, err)
    return code


def _failed(event: str, exc: BaseException) -> int:
    why = "hook input nested too deeply" if isinstance(exc, RecursionError) else getattr(exc, "message", exc)
    sys.stderr.write(f"frontdesk hook {event}: {why}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
