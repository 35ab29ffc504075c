"""The CLI's fast path (issue 21): the commands agents call in loops, answered without argparse, re, json or socket.

`status ID`, `report ID`, `logs ID [--stderr]`, `cancel ID` and `wait ID...` (each with or without `--json`),
with plain numeric ids, on the user's Unix socket, are recognised here by hand, sent with `_socket` and rendered
with the C halves of json (`_json`), byte for byte as the full CLI renders them (tests/integration/
test_cli_fast_path.py runs both). Anything else returns None and the full CLI runs instead: any other flag or form,
`--help`, an array task id (12_3), FRONTDESK_URL / FRONTDESK_TOKEN_FILE / a site config, a socket that fails the
rendezvous checks, no gateway (the full path autostarts one or says why not), and every answer but HTTP 200 (the
full path prints its error), except to a wait: the gateway's error answer to a wait (a 503 while it stops) is
printed here as the full CLI prints it, and so is an HTTP 200 cut off or not JSON, since asking again could meet
another answer. The request and the answer's framing are frontdesk.wire's, as for every client. Nothing is
written before the answer is known to be good, so falling back repeats at most one request that changed nothing
(a read, a cancel the gateway refused).
"""

from __future__ import annotations

import os
import sys

from frontdesk.thin import SESSION_CHARS as _SESSION_CHARS
from frontdesk.thin import Broken as _Broken
from frontdesk.thin import Fallback as _Fallback
from frontdesk.thin import NotOk as _NotOk
from frontdesk.thin import connect as _connect  # noqa: F401  (tests/integration/test_fast_rendezvous.py)
from frontdesk.thin import dumps as _dumps
from frontdesk.thin import loads as _loads
from frontdesk.thin import request as _request
from frontdesk.thin import socket_path as _socket_path

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HOT", "run"]

HOT = frozenset(("status", "report", "logs", "wait", "cancel"))
"""The commands this module may answer (main.py imports it only for these)."""

_FLAGS = {
    "status": ("--json",),
    "report": ("--json",),
    "logs": ("--json", "--stderr"),
    "wait": ("--json",),
    "cancel": ("--json",),
}
_HEADER = f"{'ID':>6}  {'NAME':<24} {'STATE':<13} {'CLASS':<9} REASON"


def run(argv: list[str]) -> int | None:
    """The exit code of a hot command answered here, or None: run the full CLI (nothing was printed)."""
    try:
        parsed = _parse(argv)
        if parsed is None:
            return None
        command, ids, flags = parsed
        path = _socket_path()
        sid = _session()
        if command == "wait":
            return _wait(path, ids, "--json" in flags, sid)
        if command == "cancel":
            return _cancel(path, ids[0], "--json" in flags)
        data = _get(path, _url(command, ids[0], flags), 30.0)
        if not isinstance(data, dict):
            raise _Fallback
        text = None if "--json" in flags else _text(command, data)  # (an array's status line: the full way)
    except _Fallback:
        return None
    except _Broken as exc:
        return _broken(str(exc), argv)
    except KeyboardInterrupt:
        sys.stderr.write("frontdesk: interrupted\n")
        return 130
    try:
        _emit("--json" in flags, data, text)
        if command == "report" and sid:
            _mark_read(path, sid, [data], "report")
    except BrokenPipeError:
        return 0
    return 0


def _broken(message: str, argv: list[str]) -> int:
    """What cli/main.py (or, for one id, cli/jobs.cmd_cancel) prints for client.request's GatewayUnavailable."""
    from frontdesk.cli.output import emit, emit_error
    from frontdesk.errors import GatewayUnavailable

    exc, as_json = GatewayUnavailable(message), "--json" in argv
    if argv[0] != "cancel":
        emit_error(as_json, exc.to_payload())
        return exc.exit_code
    sys.stderr.write(f"frontdesk: {exc.message}\n")
    ident = next(a for a in argv[1:] if a != "--json")
    emit(as_json, [{"id": ident, **exc.to_payload()}], "")
    return exc.exit_code


def _parse(argv: list[str]) -> tuple[str, list[str], set[str]] | None:
    """(command, ids, flags) for the simple forms this module answers, else None."""
    if not argv or argv[0] not in _FLAGS:
        return None
    command, ids, flags = argv[0], [], set()
    for arg in argv[1:]:
        if arg in _FLAGS[command]:
            flags.add(arg)
        elif arg.isascii() and arg.isdigit():
            ids.append(arg)
        else:
            return None  # another flag, --help, an abbreviation, 12_3, a bad id: the full CLI says what it is
    if len(ids) != 1 and (command != "wait" or not ids):
        return None
    return command, ids, flags


def _session() -> str | None:
    """readmark.session_of(); an id that is not a plain token goes the full way."""
    e = os.environ
    sid = e.get("FRONTDESK_SESSION") or e.get("CLAUDE_CODE_SESSION_ID") or e.get("CODEX_THREAD_ID") or None
    if sid is not None and not set(sid) <= _SESSION_CHARS:
        raise _Fallback
    return sid


def _url(command: str, job: str, flags: set[str]) -> str:
    if command == "status":
        return f"/v1/jobs/{int(job)}"
    if command == "report":
        return f"/v1/jobs/{int(job)}/report"
    return f"/v1/jobs/{int(job)}/logs?tail=50&stream={'stderr' if '--stderr' in flags else 'stdout'}"


def _text(command: str, data: dict[str, Any]) -> str | None:
    """What `emit` prints without --json (checked now, so that nothing is printed before a fallback)."""
    if command == "status":
        return _HEADER + "\n" + _row(data)
    if command == "logs":
        lines = data.get("lines")
        if not (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
            raise _Fallback
        return "\n".join(lines)
    text = data.get("text")
    if not isinstance(text, str):
        raise _Fallback
    return text


def _row(job: dict[str, Any]) -> str:
    """cli/jobs.py's _row for a job that is not an array (an array's line goes the full way)."""
    if job.get("array") or job.get("array_id") is not None:
        raise _Fallback
    try:
        name = (job.get("name") or job.get("spec", {}).get("name") or "-")[:24]
        reason = job.get("reason") or ""
        return f"{job['id']!s:>6}  {name:<24} {job['state']:<13} {job.get('job_class') or '-':<9} {reason}"
    except (KeyError, TypeError, AttributeError, ValueError):
        raise _Fallback from None


def _wait(path: str, ids: list[str], as_json: bool, sid: str | None) -> int | None:
    body = '{"ids": [' + ", ".join(str(int(i)) for i in ids) + '], "mode": "all", "timeout": null}'
    try:
        res = _request(path, "POST", "/v1/wait", body, 10.0**7)
    except _NotOk as exc:  # (a wait the gateway refused, e.g. 503 while it stops: asking again would differ)
        return _error_answer(exc, as_json)
    if not isinstance(res, dict) or res.get("done") is not True or not isinstance(res.get("reports"), list):
        raise _Fallback  # not ended (only with a timeout, which goes the full way) or an odd answer
    reports = res["reports"]
    if not all(isinstance(r, dict) and isinstance(r.get("text"), str) for r in reports):
        raise _Fallback
    try:
        if as_json:
            _emit(True, res, None)
        else:
            from frontdesk.cli.termtext import for_terminal

            sys.stdout.write(for_terminal("".join(r["text"] + "\n\n" for r in reports), sys.stdout))
            sys.stdout.flush()
        if sid:
            _mark_read(path, sid, reports, "wait")
    except BrokenPipeError:
        return 0
    from frontdesk.jobs.state import JobState  # (enum: already imported by the console script's `re`)

    bad = [r for r in reports if r.get("state") != JobState.COMPLETED]
    return 1 if bad and len(bad) == len(reports) else 0


def _cancel(path: str, job: str, as_json: bool) -> int:
    """One job cancelled (HTTP 200); any error (409: it has ended) goes the full way, which asks again (nothing was
    cancelled) and prints what cli/jobs.cmd_cancel prints, with readmark.cancel_once's rule for replayed turns."""
    res = _request(path, "POST", f"/v1/jobs/{int(job)}/cancel", "{}", 30.0)
    if not isinstance(res, dict) or "id" not in res or "error" in res or res.get("already_ended"):
        raise _Fallback
    try:
        _emit(as_json, [res], f"cancelling {res['id']}")
    except BrokenPipeError:
        pass
    return 0


def _emit(as_json: bool, data: Any, text: str | None) -> None:
    """cli/output.emit."""
    out = _dumps(data) + "\n" if as_json else text
    if out and not as_json:
        from frontdesk.cli.termtext import for_terminal

        out = for_terminal(out, sys.stdout)
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    sys.stdout.flush()


def _get(path: str, url: str, timeout: float) -> Any:
    return _request(path, "GET", url, None, timeout)


def _error_answer(exc: _NotOk, as_json: bool) -> int:
    """What cli/main.py prints for the gateway's error answer (its FrontdeskError); _Fallback for any other."""
    payload = _loads(exc.body) if exc.body else None
    if exc.status < 400 or not isinstance(payload, dict) or "error" not in payload:
        raise _Fallback
    from frontdesk.cli.output import emit_error
    from frontdesk.errors import from_payload

    err = from_payload(payload)
    emit_error(as_json, err.to_payload())
    return err.exit_code


def _mark_read(path: str, sid: str, reports: list[Any], via: str) -> None:
    """readmark.mark_read: tell the gateway this session read these reports (never raises)."""
    jobs = sorted({int(r["job_id"]) for r in reports if isinstance(r.get("job_id"), int)})
    if not jobs:
        return
    body = '{"jobs": [' + ", ".join(str(j) for j in jobs) + '], "via": "' + via + '"}'
    try:
        _request(path, "POST", f"/v1/sessions/{sid}/read", body, 5.0)
    except (_Fallback, _Broken):
        pass
