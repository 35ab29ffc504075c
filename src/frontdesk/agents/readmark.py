"""Client side of "read means delivered" (issue 19, defect 2). Stdlib + client only: hot path.

When the owning agent session reads a report itself (`frontdesk run --wait`, `wait`, `report`, the MCP
`wait`/`report` tools), the client tells the gateway, which marks the report delivered: the Stop hook
and the live channels do not bring it again. Outside an agent session this does nothing; a gateway
that does not answer costs one failed request and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["cancel_line", "cancel_once", "delivery_note", "mark_read", "session_of"]


def session_of(env: Mapping[str, str] | None = None) -> str | None:
    """The agent session this process runs in, as the submit context names it."""
    e = os.environ if env is None else env
    return e.get("FRONTDESK_SESSION") or e.get("CLAUDE_CODE_SESSION_ID") or e.get("CODEX_THREAD_ID") or None


def mark_read(client: Any, reports: Iterable[Mapping[str, Any]], via: str, session: str | None = None) -> list[int]:
    """Tell the gateway the session read these reports; the jobs it marked (never raises)."""
    from frontdesk.errors import FrontdeskError

    sid = session or session_of()
    jobs = sorted({int(r["job_id"]) for r in reports if isinstance(r.get("job_id"), int)})
    if not sid or not jobs:
        return []
    try:
        got = client.request("POST", f"/v1/sessions/{sid}/read", {"jobs": jobs, "via": via}, timeout=5)
    except FrontdeskError:
        return []  # not our session, an older gateway, the agents plug-in off: the hooks deliver as before
    marked = got.get("marked") if isinstance(got, dict) else None
    return [int(j) for j in marked] if isinstance(marked, list) else []


def delivery_note(client: Any, job: Mapping[str, Any]) -> str | None:
    """One stderr line for `frontdesk run`/`submit`: how this job's report will reach its agent session."""
    from frontdesk.errors import FrontdeskError

    sid = job.get("session")
    if not isinstance(sid, str) or not sid:
        return None
    if job.get("duplicate"):  # issue 18: a replayed turn's submission returns the job it made
        return (
            f"frontdesk: job {job.get('id')}: already submitted with the same idempotency key "
            f"(a replayed turn): not run again; it is {job.get('state')}"
        )
    try:
        got = client.request("GET", f"/v1/sessions/{sid}", timeout=5)
    except FrontdeskError:
        return None
    route = got.get("route") if isinstance(got, dict) else None
    return f"frontdesk: job {job.get('id')}: the report {route}" if isinstance(route, str) and route else None


def cancel_once(client: Any, job_id: int | str) -> dict[str, Any]:
    """Cancel a job; one of this session's that already ended is no error (issue 18: a replayed turn)."""
    from frontdesk.errors import Conflict

    try:
        got: dict[str, Any] = client.cancel(job_id)
        return got
    except Conflict:
        job: dict[str, Any] = client.job(job_id)
        if session_of() is None or job.get("session") != session_of():
            raise
        return {**job, "already_ended": True}


def cancel_line(job: Mapping[str, Any]) -> str:
    """What `frontdesk cancel` prints for one job."""
    if job.get("already_ended"):
        return f"job {job['id']} already ended ({job.get('state')}): nothing to cancel"
    return f"cancelling {job['id']}"
