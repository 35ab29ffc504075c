"""SlurmPlugin: serves the polling shield's cached view of the cluster under /v1/slurm/.

`GET /v1/slurm/squeue` answers every shim caller from the backend's one shared JobTable snapshot,
at most `[slurm] refresh_seconds` old: fifty agents polling every two seconds cost the controller one
query per interval, not fifty. `?history=true` adds ended Slurm jobs the gateway still knows of (the
controller forgets them after MinJobAge), which is what the `sacct` shim reads.

Per caller (`for_caller`): one's own jobs whole; others' jobs as the real squeue would show them on this
site (none with Slurm's `PrivateData=jobs`, read once from `scontrol show config` or `[access] slurm_private_data`),
never their paths, command or comment (`OTHERS_HIDDEN`), and never frontdesk's own rows of them (its job ids,
history, usage). Admins see everything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request, Response

from frontdesk.backends.slurm.arrays import arrays_present
from frontdesk.backends.slurm.backend import SlurmBackend, SlurmConfig
from frontdesk.backends.slurm.options import OptionError, validate_passthrough
from frontdesk.backends.slurm.parse import JobRecord
from frontdesk.backends.slurm.views import ViewFiles, uptime
from frontdesk.errors import BackendError, Conflict, SpecError
from frontdesk.identity import Caller
from frontdesk.plugins import Admission, GatewayHandle, Json, SubmitContext
from frontdesk.tasks import cancel_and_wait

if TYPE_CHECKING:
    from fastapi import APIRouter

    from frontdesk.config import Settings
    from frontdesk.plugins import Admits, Attaches, Routes, ShowsCluster, Stops
    from frontdesk.spec.model import JobSpec

__all__ = ["OTHERS_HIDDEN", "SlurmPlugin", "STALE_AFTER", "VIEW_FIELDS", "for_caller", "parse_private_data", "view_row"]

STALE_AFTER = 3.0
"""Seconds the view waits for the controller before serving the last snapshot with a note."""

VIEW_FIELDS = (
    "JobId",
    "JobName",
    "UserId",
    "Account",
    "QOS",
    "Priority",
    "JobState",
    "Reason",
    "Dependency",
    "ExitCode",
    "RunTime",
    "TimeLimit",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "Partition",
    "NodeList",
    "NumNodes",
    "NumCPUs",
    "MinMemoryNode",
    "MinMemoryCPU",
    "TresPerNode",
    "Command",
    "WorkDir",
    "StdOut",
    "StdErr",
    "Comment",
    "ArrayJobId",
    "ArrayTaskId",
    "GroupId",
    "Features",
    "ReqNodeList",
    "ExcNodeList",
)
"""The scontrol fields the shims format (squeue %-codes, sacct fields); the rest stay on the gateway."""


OTHERS_HIDDEN = frozenset({"Command", "WorkDir", "StdOut", "StdErr", "Comment"})
"""Fields of another user's job a shim never gets: its script and paths (frontdesk's job directory) and comment."""


def _user_of(row: Mapping[str, Any]) -> str:
    return str(row.get("UserId", "")).split("(", 1)[0]


def for_caller(view: Mapping[str, Any], caller: Caller | None, private_data: frozenset[str]) -> dict[str, Any]:
    """The view as `caller` (None for in-process use) may see it (pure)."""
    if caller is None or caller.admin:
        return dict(view)
    me = str(caller.user)
    jobs = []
    for row in view.get("jobs", []):
        if _user_of(row) == me:
            jobs.append(row)
        elif "jobs" not in private_data:
            jobs.append({k: v for k, v in row.items() if k not in OTHERS_HIDDEN})
    mine = {str(r.get("JobId")) for r in view.get("jobs", []) if _user_of(r) == me}
    mine |= {str(r["ArrayJobId"]) for r in view.get("jobs", []) if _user_of(r) == me and r.get("ArrayJobId")}
    owned = view.get("frontdesk", {})
    out = {**view, "jobs": jobs, "frontdesk": {k: v for k, v in owned.items() if k.split("_", 1)[0] in mine}}
    if "history" in view:
        out["history"] = [h for h in view["history"] if h.get("principal") == me]
        mine |= {str(h.get("backend_id")) for h in out["history"]}
        out["usage"] = {k: v for k, v in view.get("usage", {}).items() if k in mine}
    return out


def parse_private_data(text: str) -> frozenset[str]:
    """`PrivateData = jobs,usage` from `scontrol show config` (or a setting) → {"jobs", "usage"}."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "PrivateData":
            text = value
            break
    else:
        if "=" in text:
            return frozenset({"jobs"})  # a config without the line: not knowable, so private
    names = {v.strip().lower() for v in text.replace(" ", ",").split(",") if v.strip()}
    return frozenset(names - {"none", "(null)"})


def view_row(record: Mapping[str, str]) -> dict[str, str]:
    """The part of one scontrol record a shim needs."""
    return {k: record[k] for k in VIEW_FIELDS if k in record}


class SlurmPlugin:
    """The gateway side of the polling shield (and Slurm facts for /v1/cluster)."""

    name = "slurm"
    ACCESS_KEYS = frozenset({"slurm_private_data"})  # the one [access] key this plug-in reads

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = SlurmConfig.from_settings(settings) if settings.backend == "slurm" else None
        self.gateway: GatewayHandle | None = None
        self.served = 0
        """Shim answers served (each would have been a real squeue: two controller RPCs)."""
        given = settings.section("access").get("slurm_private_data")
        self._private: frozenset[str] | None = None if given is None else parse_private_data(str(given))
        """Slurm's PrivateData on this site (read once from the controller when not set)."""
        sock = getattr(settings, "socket", None)
        on = self.config is not None and self.config.view_files and sock is not None
        self._views = ViewFiles(Path(str(sock)).parent / "squeue-views") if on else None
        """Rendered answers for the `sh` squeue shim (None: files off, every call asks the socket)."""
        self._keeper: asyncio.Task[None] | None = None

    def attach(self, gateway: GatewayHandle) -> None:
        """Remember the gateway (its backend holds the shared JobTable)."""
        self.gateway = gateway

    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission | None:
        """Check a job's sbatch options (spec.slurm) before anything is stored; SpecError names the bad one."""
        given = spec.slurm
        if given is None:
            return None
        if self.config is None:
            raise SpecError("sbatch options (spec.slurm) need a gateway on the slurm backend", field="slurm")
        try:
            validate_passthrough(given.options)
        except OptionError as exc:
            raise SpecError(f"slurm.options: {exc}", field="slurm.options") from None
        if given.submit_by is not None and time.time() > given.submit_by:
            raise SpecError("the submitter gave up before the gateway took the job (slurm.submit_by)", field="slurm")
        return None

    def _backend(self) -> SlurmBackend:
        backend = getattr(self.gateway, "backend", None)
        if not isinstance(backend, SlurmBackend):
            raise Conflict('this gateway does not run the slurm backend (set [gateway] backend = "slurm")')
        return backend

    async def private_data(self) -> frozenset[str]:
        """The site's PrivateData (`scontrol show config`, asked once); private ({"jobs"}) when it cannot be read."""
        if self._private is None:
            try:
                text = (await self._backend().runner(["scontrol", "show", "config"])).stdout
                self._private = parse_private_data(text)
            except BackendError:
                return frozenset({"jobs"})  # asked again next time
        return self._private

    async def squeue_view(self, history: bool = False, caller: Caller | None = None) -> dict[str, Any]:
        """Every job the controller holds, from a snapshot at most refresh_seconds old, as `caller` may see it."""
        backend = self._backend()
        stale = None
        try:
            records, as_of = await asyncio.wait_for(asyncio.shield(backend.view()), timeout=STALE_AFTER)
        except (BackendError, TimeoutError) as exc:
            records, as_of = backend.table.last()
            if not as_of:
                raise BackendError(f"the Slurm controller does not answer and no view is cached: {exc}") from None
            stale = str(exc).splitlines()[0][:200] if str(exc) else f"no answer in {STALE_AFTER:g} s"
        self.served += 1
        out = self._base_view(records, as_of, stale)
        if history:
            out["history"] = self._history(records)
            out["usage"] = self._usage()
        if caller is None or caller.admin:
            return out
        return for_caller(out, caller, await self.private_data())

    def _base_view(self, records: Mapping[str, JobRecord], as_of: float, stale: str | None) -> dict[str, Any]:
        return {
            "as_of": as_of,
            "now": time.time(),
            "refresh_seconds": self._backend().config.refresh_seconds,
            "jobs": [view_row(r) for r in records.values()],
            "frontdesk": self._owned(records),
            "stale": stale,
        }

    def _owned(self, records: Mapping[str, JobRecord]) -> dict[str, int]:
        """Slurm id → frontdesk job id of ours: plain jobs, array tasks (`844_3`) and arrays (`844` → the array)."""
        if self.gateway is None or not records:
            return {}
        out = {str(r.backend_id): r.id for r in self.gateway.store.by_backend_ids("slurm", list(records))}
        for array in arrays_present(list(records.values())):
            rows = self.gateway.store.conn.execute(
                "SELECT id, backend_id, array_id FROM jobs WHERE backend='slurm' AND backend_id LIKE ? ESCAPE '!'",
                (f"{array}!_%",),
            ).fetchall()
            parents = {r["array_id"] for r in rows}
            out.update({str(r["backend_id"]): int(r["id"]) for r in rows})
            if len(parents) == 1 and None not in parents:
                out[array] = int(parents.pop())
        return out

    def _history(self, records: Mapping[str, JobRecord]) -> list[dict[str, Any]]:
        if self.gateway is None:
            return []
        rows = self.gateway.store.conn.execute(
            "SELECT id, name, state, backend_id, exit_code, signal, partition, principal, submitted_at, "
            "started_at, ended_at FROM jobs WHERE backend='slurm' AND backend_id IS NOT NULL "
            "ORDER BY id DESC LIMIT 2000"
        ).fetchall()
        return [dict(zip(r.keys(), r, strict=True)) for r in rows if str(r["backend_id"]) not in records]

    def _usage(self) -> dict[str, dict[str, Any]]:
        """What frontdesk measured of its ended Slurm jobs (peak memory, CPU), by Slurm id: sacct's MaxRSS
        and TotalCPU on sites without accounting."""
        import json

        if self.gateway is None:
            return {}
        rows = self.gateway.store.conn.execute(
            "SELECT backend_id, usage FROM jobs WHERE backend='slurm' AND backend_id IS NOT NULL "
            "AND usage IS NOT NULL ORDER BY id DESC LIMIT 2000"
        ).fetchall()
        out: dict[str, dict[str, Any]] = {}
        for bid, usage in rows:
            try:
                data = json.loads(usage)
            except ValueError:
                continue
            if isinstance(data, dict):
                out[str(bid)] = data
        return out

    async def squeue_text(self, body: bytes, caller: Caller | None = None) -> Response:
        """squeue's text for the socket-only client: body `uid=N\\0[SQUEUE_*=v\\0...]--\\0argv...`.

        200 with stdout as the body, `X-Exit` and `X-Stderr-Hex`; 409 when the real squeue must answer."""
        import pwd

        from frontdesk.backends.slurm.squeue_text import Passthrough, answer

        items = body.decode("utf-8", "surrogateescape").split("\0")
        cut = items.index("--") if "--" in items else len(items)
        head, argv = items[:cut], items[cut + 1 :]
        fields = dict(item.partition("=")[::2] for item in head)
        environ = {k: v for k, v in fields.items() if k.startswith("SQUEUE_")}
        try:
            answer(argv, environ, "", None)
        except Passthrough as exc:
            return Response(str(exc), status_code=409, media_type="text/plain")
        uid = fields.get("uid", "")
        try:
            me = pwd.getpwuid(int(uid)).pw_name if uid.isdigit() else ""
        except KeyError:
            me = uid
        me = caller.user if caller is not None else me  # the kernel's word (SO_PEERCRED) over the body's uid
        try:
            rc, out, err = answer(argv, environ, me, await self.squeue_view(caller=caller))
        except Passthrough as exc:  # an answer too large to build here: the real squeue prints it
            return Response(str(exc), status_code=409, media_type="text/plain")
        if rc == 0 and not err and not environ:
            self._keep(argv, caller, out)
        headers = {"X-Exit": str(rc), "X-Stderr-Hex": err.encode().hex()}
        return Response(out, media_type="text/plain", headers=headers)

    def _keep(self, argv: list[str], caller: Caller | None, out: str) -> None:
        """Keep this plain answer rendered in the caller's file from now on (views.py)."""
        uid = caller.uid if caller is not None else None
        from frontdesk.backends.slurm.squeue_text import has_clock

        if self._views is None or uid is None or has_clock(argv):
            return
        reg = self._views.register(uid, argv, caller)
        if reg is None:
            return
        try:
            self._views.write(reg, out)
        except OSError:
            self._views.drop(reg)
            return
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.get_running_loop().create_task(self._keep_views())

    async def _keep_views(self) -> None:
        """While the files are read: re-render them from each new snapshot, then move `fresh` on.

        A served file is at most refresh_seconds old (as a socket answer); snapshots are taken at 3/4 of
        that, so a new one is in place before the last runs out. An interval in which no file was read
        stops it (no controller query for nobody); the next call then goes through the socket, which
        writes its file and starts this again."""
        assert self._views is not None
        backend, last = self._backend(), 0.0
        refresh = backend.config.refresh_seconds
        early = refresh * 0.75
        while self._views.registrations:
            try:
                records, as_of = await asyncio.wait_for(asyncio.shield(backend.view(early)), timeout=STALE_AFTER)
            except (BackendError, TimeoutError):
                as_of = time.time() - early + min(early, 1.0)  # `fresh` runs out: the shims ask the socket
            else:
                if as_of != last:
                    last = as_of
                    await self._render_views(records, as_of)
                    self._views.set_fresh(uptime() - (time.time() - as_of) + refresh)
            await asyncio.sleep(max(0.05, as_of + early - time.time()))
            if not self._views.expire(time.time()):
                break
        self._keeper = None

    async def _render_views(self, records: Mapping[str, JobRecord], as_of: float) -> None:
        from frontdesk.backends.slurm.squeue_text import Passthrough, answer

        assert self._views is not None
        base = self._base_view(records, as_of, None)
        private = await self.private_data()
        seen: dict[int, dict[str, Any]] = {}
        for i, reg in enumerate(list(self._views.registrations.values())):
            if reg.uid not in seen:
                seen[reg.uid] = for_caller(base, reg.caller, private)
            try:
                rc, out, err = answer(reg.argv, {}, str(reg.caller.user), seen[reg.uid])
                if rc or err:
                    raise Passthrough("not a plain answer now")
                self._views.write(reg, out)
            except (Passthrough, OSError):
                self._views.drop(reg)  # the next call asks the socket again
            if i % 32 == 31:
                await asyncio.sleep(0)

    async def stop(self) -> None:
        """Stop serving files: the shims fall back to the socket at once."""
        await cancel_and_wait(self._keeper)
        if self._views is not None:
            self._views.close()

    def cluster_info(self) -> dict[str, Json]:
        """Shield counters for /v1/cluster."""
        backend = getattr(self.gateway, "backend", None)
        queries = backend.table.queries if isinstance(backend, SlurmBackend) else 0
        calls: dict[str, Json] = dict(backend.runner.calls) if isinstance(backend, SlurmBackend) else {}
        return {
            "shim_answers": self.served,
            "controller_queries": queries,
            "controller_commands": calls,
            "refresh_seconds": self.config.refresh_seconds if self.config else None,
        }

    def router(self) -> APIRouter:
        """GET /v1/slurm/squeue[?history=true]."""
        from fastapi import APIRouter

        r = APIRouter()

        @r.get("/slurm/squeue")
        async def squeue(request: Request, history: bool = False) -> dict[str, Any]:
            return await self.squeue_view(history, getattr(request.state, "caller", None))

        @r.post("/slurm/text/squeue")
        async def squeue_text(request: Request) -> Response:
            return await self.squeue_text(await request.body(), getattr(request.state, "caller", None))

        return r


if TYPE_CHECKING:  # mypy checks that the plug-in fits each hook of the gateway's seam (frontdesk.plugins)

    def _fits(p: SlurmPlugin) -> tuple[Attaches, Admits, Routes, ShowsCluster, Stops]:
        return p, p, p, p, p
