"""The gateway's insight routes: `GET /metrics` (Prometheus; aggregates only: no user names, job names or
commands), `GET /` (the dashboard: the caller's own jobs and guard verdicts, everyone's for an admin) and
`GET /ui/jobs/{id}` (a job's report, under the same access rule as `/v1/jobs/{id}/report`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from frontdesk.config import TableKeys
from frontdesk.jobs.ids import Id

if TYPE_CHECKING:
    from frontdesk.api.access import Access
    from frontdesk.identity import Caller
    from frontdesk.plugins import Panel
    from frontdesk.telemetry.metrics import ShieldCounters

__all__ = ["TELEMETRY_KEYS", "router"]

router = APIRouter()
log = logging.getLogger(__name__)

_JOBS_SHOWN = 50
_VERDICTS_SHOWN = 20


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """The gateway's metrics in the Prometheus text format, read from its store."""
    from frontdesk.telemetry.metrics import CONTENT_TYPE, exposition

    gw = request.app.state.gw
    body = await asyncio.to_thread(exposition, gw.settings.db_path, _shield(gw.plugins))
    return Response(content=body, media_type=CONTENT_TYPE)


def _shield(plugins: Sequence[object]) -> ShieldCounters | None:
    """The Slurm plug-in's shield counters, on a gateway whose backend is Slurm."""
    from frontdesk.telemetry.metrics import ShieldCounters

    for plugin in plugins:
        info = getattr(plugin, "cluster_info", None)
        if getattr(plugin, "name", None) == "slurm" and callable(info) and getattr(plugin, "config", None):
            got = info()
            return ShieldCounters(int(got.get("shim_answers") or 0), int(got.get("controller_queries") or 0))
    return None


@router.get("/", include_in_schema=False)
async def dashboard(request: Request, part: str | None = None) -> HTMLResponse:
    """The page (or only its refreshing part with `?part=main`)."""
    from dataclasses import replace

    from frontdesk.api.access import Action
    from frontdesk.telemetry.dashboard import VerdictRow, job_rows, render_main, render_page

    gw, access, caller = request.app.state.gw, request.app.state.access, request.state.caller
    everyone = access.may(caller, None, Action.LIST)
    records = gw.store.select(principal=None if everyone else caller.user, limit=_JOBS_SHOWN)
    listed = [r for r in records if access.may(caller, r.principal, Action.LIST)]
    # how a job ended is its report's: another user's listed job (private_jobs = false) shows no report kind
    jobs = [
        row if access.may(caller, r.principal, Action.READ) else replace(row, kind="")
        for r, row in zip(listed, job_rows(listed), strict=True)
    ]
    sql = "SELECT seq, principal, data FROM events WHERE kind = 'guard.verdict'"
    args: tuple[object, ...] = ()
    if not caller.admin:
        sql, args = sql + " AND principal = ?", (caller.user,)
    verdicts = []
    for seq, principal, raw in gw.store.conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, _VERDICTS_SHOWN)):
        data = json.loads(raw) if raw else {}
        command = str(data.get("command") or data.get("tool_input") or "")[:200]
        verdicts.append(
            VerdictRow(seq, principal or "", str(data.get("verdict", "")), str(data.get("rule") or ""), command)
        )
    render = render_main if part == "main" else render_page
    panels = _panels(gw.plugins, caller)
    extra = [_gpu_panel(gw.backend, caller, access), await _insight_panel(gw.settings)]
    return HTMLResponse(render(caller.user, caller.admin, jobs, verdicts, panels + [p for p in extra if p]))


_INSIGHT: dict[str, tuple[float, Panel | None]] = {}
"""The last analysis per observe file: (the file's mtime, its panel); recomputed when the file changes."""


TELEMETRY_KEYS = TableKeys.of("telemetry", "observe_db")


async def _insight_panel(settings: Any) -> Panel | None:
    """`frontdesk analyze` of the site's observe file (`[telemetry] observe_db`) joined with this gateway's
    journal: aggregates only (no names, no commands), so every caller sees them, like `/metrics`."""
    from pathlib import Path

    raw = settings.section("telemetry").get("observe_db")
    path = Path(str(raw)) if raw else None
    if path is None or not path.is_file():
        return None
    mtime = path.stat().st_mtime
    cached = _INSIGHT.get(str(path))
    if cached is None or cached[0] != mtime:
        cached = (mtime, await asyncio.to_thread(_analyze_panel, path, settings.db_path))
        _INSIGHT[str(path)] = cached
    return cached[1]


def _analyze_panel(observe: Any, journal: Any) -> Panel | None:
    from dataclasses import asdict

    from frontdesk.errors import FrontdeskError
    from frontdesk.plugins import Panel
    from frontdesk.telemetry.analyze import analyze

    try:
        m = analyze(observe, journal if journal.is_file() else None)
    except FrontdeskError as exc:
        return Panel("Agents against people", ("figure", "agents", "people"), (), note=exc.message)
    agent, person = asdict(m.agent), asdict(m.person)
    rows = tuple((k.replace("_", " "), f"{agent[k]:g}", f"{person[k]:g}") for k in agent)
    note = f"frontdesk analyze over {m.observed_minutes:g} observed minutes ({observe})"
    return Panel("Agents against people", ("figure", "agents", "people"), rows, note=note)


def _gpu_panel(backend: object, caller: Caller, access: Access) -> Panel | None:
    """Each GPU of the embedded backend: model, whole/shared/free, free memory, and its holders (a holder's job
    and user only where the caller may see that job, as in `GET /v1/cluster`)."""
    from frontdesk.api.jobs import gpu_holders
    from frontdesk.plugins import Panel
    from frontdesk.spec.units import format_bytes

    view = getattr(backend, "gpu_view", None)
    devices = view() if view is not None else []
    if not devices:
        return None
    rows = []
    for device in (gpu_holders(d, caller, access) for d in devices):
        held = [
            f"{'job ' + str(h['job_id']) + ' (' + str(h['principal']) + ')' if h['job_id'] else 'another user'}"
            f"{' ' + format_bytes(h['memory_bytes']) if h['memory_bytes'] else ' whole'}"
            for h in device["holders"]
        ]
        rows.append((str(device["index"]), str(device["model"]), str(device["mode"]),
                     f"{format_bytes(device['free_bytes'])} of {format_bytes(device['memory_bytes'])}",
                     ", ".join(held)))  # fmt: skip
    return Panel("GPUs", ("gpu", "model", "mode", "free for shares", "held by"), tuple(rows))


def _panels(plugins: Sequence[object], caller: Caller) -> list[Panel]:
    """Each plug-in's table for this caller; one that fails is left out (logged), never the whole page."""
    from frontdesk.plugins import ShowsPanel

    out = []
    for plugin in plugins:
        if isinstance(plugin, ShowsPanel):
            try:
                got = plugin.panel(caller)
            except Exception:
                log.exception("the %s panel failed", getattr(plugin, "name", "?"))
                continue
            if got is not None:
                out.append(got)
    return out


@router.get("/ui/jobs/{job_id}", include_in_schema=False)
async def report_page(job_id: Id, request: Request) -> HTMLResponse:
    """A job's report as a page (403 for someone else's job, 404 for none)."""
    from frontdesk.api.access import Action
    from frontdesk.api.reportview import report_for
    from frontdesk.telemetry.dashboard import render_report

    gw, access, caller = request.app.state.gw, request.app.state.access, request.state.caller
    row = gw.get_job(job_id)
    access.job(caller, job_id, row.principal, Action.READ, "read the report of")
    rep = report_for(gw, caller, row.principal, gw.report(job_id))  # a labmate's: without log lines
    text = str(rep.get("text") or "") if isinstance(rep, dict) else f"job {job_id} has not ended yet ({row.state})"
    return HTMLResponse(render_report(job_id, text))
