"""`frontdesk mcp`: the Model Context Protocol over stdio (official `mcp` SDK 2.x, MCPServer).

Tools: submit, queue, cluster, wait, report, logs, cancel, memory_search. Resources: recent reports
(`frontdesk://reports/recent`) and one report (`frontdesk://reports/{job_id}`). Results are compact
by design: the report text, never the raw log (logs is an explicit, bounded excerpt). Every tool answers
with readable text only (`structured_output=False`): Claude Code shows the model the structured copy
when there is one, which would be the report as JSON inside a string (issue 19). A report the owning
session reads through `wait` or `report` is marked delivered, so no hook brings it again. Every call goes
through the thin client to the gateway, in a worker thread, as the user who started the server; the
submit context names the agent session this server runs in (detect_context), so reports come back
to that session through its hooks.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from frontdesk.agents.detect import detect_context
from frontdesk.client import Client
from frontdesk.errors import FrontdeskError, NotFound
from frontdesk.jobs.ids import Id
from frontdesk.jobs.state import TERMINAL_STATES

__all__ = ["build_server", "lesson_lines", "serve"]

T = TypeVar("T")

_INSTRUCTIONS = (
    "frontdesk runs jobs (experiments, training, builds) on this machine or the cluster. Submit with "
    "`submit`, then keep working or end your turn: the job's short report comes back to this session "
    "when it ends. Use `wait` only when you have nothing else to do. Do not poll `queue` or `logs` in a loop."
)


def _compact_job(j: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "id",
        "name",
        "state",
        "reason",
        "exit_code",
        "partition",
        "session",
        "submitted_at",
        "started_at",
        "ended_at",
    )
    return {k: j.get(k) for k in keys if j.get(k) is not None}


def lesson_lines(got: Any) -> str:
    """`memory_search`'s answer: one line per lesson (id, kind, cause, fix), not its whole JSON record."""
    lessons = got.get("lessons") if isinstance(got, dict) else None
    if not isinstance(lessons, list) or not lessons:
        note = got.get("note") if isinstance(got, dict) else None
        return str(note or "no lesson matches")
    out = []
    for item in lessons:
        if not isinstance(item, dict):
            continue
        line = f"lesson {item.get('id')} [{item.get('kind')}] {item.get('cause') or item.get('line') or ''}".rstrip()
        fix = item.get("fix")
        fix_text = fix.get("text") if isinstance(fix, dict) else fix
        if fix_text:
            line += f"; fix: {fix_text}"
        elif item.get("next_step"):
            line += f"; next: {item['next_step']}"
        if item.get("scope"):
            line += f" ({item['scope']}{', ' + str(item['state']) if item.get('state') else ''})"
        out.append(" ".join(line.split()))
    return "\n".join(out)


def _count(name: str, value: int, most: int) -> int:
    """A tool's count argument: 1 or more (else a clear error, never a silent 1); above `most` reads `most`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(f"{name}: expected a whole number of at least 1 (at most {most} is used), got {value!r}")
    return min(value, most)


def build_server(client_factory: Callable[[], Client] = Client) -> MCPServer:
    """The MCP server with frontdesk's tools and resources."""
    from frontdesk import __version__

    kit = _Kit(
        MCPServer(name="frontdesk", instructions=_INSTRUCTIONS, version=__version__),
        client_factory,
        {**detect_context(), "source": "mcp"},
    )
    _submit_tools(kit)
    _result_tools(kit)
    _lookup_tools(kit)
    _resources(kit)
    return kit.server


@dataclass
class _Kit:
    """What every tool needs: the server, a client per call, the caller's context."""

    server: MCPServer
    client_factory: Callable[[], Client]
    context: dict[str, Any]

    def read(self, reports: list[dict[str, Any]], via: str) -> None:
        from frontdesk.agents.readmark import mark_read

        session = self.context.get("session")
        if session:
            mark_read(self.client_factory(), reports, via, session=str(session))

    async def call(self, fn: Callable[[Client], T]) -> T:
        try:
            return await asyncio.to_thread(lambda: fn(self.client_factory()))
        except FrontdeskError as exc:
            raise ToolError(exc.message) from None


def _submit_tools(kit: _Kit) -> None:
    """submit, queue, cluster."""
    tool = kit.server.tool(structured_output=False)
    call = kit.call
    context = kit.context

    @tool
    async def submit(
        command: str | None = None,
        spec_yaml: str | None = None,
        name: str | None = None,
        cpus: int | None = None,
        memory: str | None = None,
        gpus: float | None = None,
        walltime: str | None = None,
        workdir: str | None = None,
    ) -> str:
        """Submit a job: a command line (with optional resources) or a full spec in YAML. Returns the job id;
        the report comes back to this session when the job ends. `gpus` below 1 (0.25) shares one GPU."""
        if bool(command) == bool(spec_yaml):
            raise ToolError("give exactly one of command or spec_yaml")
        if spec_yaml:
            rec = await call(lambda c: c.submit(spec_text=spec_yaml, fmt="yaml", context=context))
        else:
            count = int(gpus) if gpus is not None and float(gpus).is_integer() else gpus  # 1.0 is one whole GPU
            given = {"cpus": cpus, "memory": memory, "gpus": count, "walltime": walltime}
            res = {k: v for k, v in given.items() if v is not None}
            spec: dict[str, Any] = {"command": command, "resources": res}
            if name:
                spec["name"] = name
            if workdir or context.get("cwd"):
                spec["workdir"] = workdir or context.get("cwd")
            rec = await call(lambda c: c.submit(spec=spec, context=context))
        out = {"job": _compact_job(rec)}
        if rec.get("warnings"):
            out["warnings"] = rec["warnings"]
        return json.dumps(out)

    @tool
    async def queue(active_only: bool = True, this_session_only: bool = False, limit: int = 50) -> str:
        """Jobs in the queue (compact records): active ones by default."""
        sid = context.get("session") if this_session_only else None
        count = _count("limit", limit, 500)
        rows = await call(lambda c: c.jobs(active="true" if active_only else None, session=sid, limit=count))
        return json.dumps([_compact_job(r) for r in rows])

    @tool
    async def cluster() -> str:
        """The cluster's pools, nodes and GPUs, free and used."""
        return json.dumps(await call(lambda c: c.request("GET", "/v1/cluster")))


def _result_tools(kit: _Kit) -> None:
    """wait, report, logs, cancel."""
    tool = kit.server.tool(structured_output=False)
    call = kit.call
    read = kit.read

    @tool
    async def wait(job_ids: list[Id], mode: str = "all", timeout_s: float = 600) -> str:
        """Block (server side, no polling) until any/all of the jobs end; returns their reports."""
        if mode not in ("any", "all"):
            raise ToolError("mode is 'any' or 'all'")
        got = await call(lambda c: c.wait(list(job_ids), mode=mode, timeout=timeout_s))
        reports = got.get("reports") or {}
        items = [r for r in (reports.values() if isinstance(reports, dict) else reports) if isinstance(r, dict)]
        texts = [r.get("text", "") for r in items]
        await asyncio.to_thread(read, items, "mcp-wait")
        pending = got.get("pending") or []
        tail = f"\n\nstill running: {', '.join(map(str, pending))}" if pending else ""
        return ("\n\n".join(texts) or "no job ended yet") + tail

    @tool
    async def report(job_id: Id) -> str:
        """The short report of an ended job (state, usage, cause and next step, log tails)."""
        rep = await call(lambda c: c.report(job_id))
        await asyncio.to_thread(read, [rep], "mcp-report")
        return str(rep.get("text") or json.dumps(rep))

    @tool
    async def logs(job_id: Id, tail: int = 50, stream: str = "stdout") -> str:
        """The last `tail` lines (1 or more; above 200 reads 200) of a job's stdout or stderr, secrets redacted."""
        if stream not in ("stdout", "stderr"):
            raise ToolError("stream is 'stdout' or 'stderr'")
        lines_wanted = _count("tail", tail, 200)
        got = await call(lambda c: c.logs(job_id, tail=lines_wanted, stream=stream))
        lines = got.get("lines") if isinstance(got, dict) else None
        return "\n".join(lines) if isinstance(lines, list) else json.dumps(got)

    @tool
    async def cancel(job_id: Id) -> str:
        """Cancel a job (and its process tree); one of this session's that already ended is no error."""
        from frontdesk.agents.readmark import cancel_once

        return json.dumps(_compact_job(await call(lambda c: cancel_once(c, job_id))))


def _lookup_tools(kit: _Kit) -> None:
    """memory_search, fs."""
    tool = kit.server.tool(structured_output=False)
    call = kit.call
    context = kit.context

    @tool
    async def memory_search(query: str, limit: int = 5) -> str:
        """Search the failure memory: lessons from earlier jobs that failed like this."""
        from urllib.parse import urlencode

        q = urlencode({"q": query, "limit": _count("limit", limit, 20)})

        def go(c: Client) -> Any:
            try:
                return c.request("GET", f"/v1/memory/search?{q}")
            except NotFound:
                return {"results": [], "note": "the memory plug-in is not enabled on this gateway"}

        return lesson_lines(await call(go))

    @tool
    async def fs(op: str, args: list[str], cursor: str | None = None, limit: int = 1000) -> str:
        """Storage operators next to the data, with the flags of grep/rg, find, head, tail, wc, tree and du
        (op is one of those; args as on a command line). Answers only results, from a cache of the tree, and
        counts against this session's metadata budget: prefer it to recursive grep/find/du on shared storage."""
        from frontdesk.cli.fs import answer

        cwd, sid = str(context.get("cwd") or os.getcwd()), context.get("session")
        lim = _count("limit", limit, 10_000)
        try:
            got = await asyncio.to_thread(
                lambda: answer(op, list(args), cwd, limit=lim, cursor=cursor, session=str(sid) if sid else None)
            )
        except FrontdeskError as exc:
            raise ToolError(exc.message) from None
        text = str(got.get("text", ""))
        errs = got.get("errors") or []
        if errs:
            text += "".join(f"\n{op}: {e.get('path')}: {e.get('message')}" for e in errs if isinstance(e, dict))
        if got.get("cursor"):
            text += f"\n[output capped; call fs again with cursor={got['cursor']!r} for the next page]"
        return text or "(nothing)"


def _resources(kit: _Kit) -> None:
    """The reports as resources."""
    client_factory = kit.client_factory

    @kit.server.resource(
        "frontdesk://reports/recent",
        name="recent-reports",
        mime_type="text/plain",
        description="Reports of the 10 most recently ended jobs",
    )
    async def recent_reports() -> str:
        def go(c: Client) -> str:
            # the caller's own jobs only: under `private_jobs = false` the listing holds others' jobs too, whose
            # reports are refused (each refusal journalled) and would push the caller's own out of the ten
            me = pwd.getpwuid(os.getuid()).pw_name
            ended = sorted(s.value for s in TERMINAL_STATES)
            rows = [r for r in c.jobs(limit=50, principal=me, state=ended) if r.get("ended_at")]
            rows.sort(key=lambda r: r.get("ended_at") or 0, reverse=True)
            texts = []
            for r in rows[:10]:
                try:
                    texts.append(str(c.report(r["id"]).get("text", "")))
                except FrontdeskError:
                    continue
            return "\n\n".join(texts) or "no ended jobs yet"

        try:
            return await asyncio.to_thread(lambda: go(client_factory()))
        except FrontdeskError as exc:
            raise ResourceError(exc.message) from None

    @kit.server.resource(
        "frontdesk://reports/{job_id}", name="report", mime_type="text/plain", description="The report of one ended job"
    )
    async def one_report(job_id: str) -> str:
        try:
            rep = await asyncio.to_thread(lambda: client_factory().report(job_id))
        except FrontdeskError as exc:
            raise ResourceError(exc.message) from None
        return str(rep.get("text") or json.dumps(rep))


def _register_session() -> None:
    ctx = detect_context()
    if not ctx.get("session"):
        return
    try:
        body = {"session": ctx["session"], "harness": ctx.get("harness"), "cwd": ctx.get("cwd")}
        Client(timeout=5).request("POST", "/v1/sessions", body)
    except FrontdeskError:
        pass  # the gateway may start later; jobs still carry the session


class _Answering:
    """The stdio read side, answering each line that is no JSON-RPC message with an error whose id is null
    (-32700 for text that is not JSON, -32600 for JSON that is no request), as JSON-RPC 2.0 asks; the SDK
    only logs such a line, which leaves a client waiting for an answer that never comes."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(_line_error(item)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _line_error(exc: Exception) -> Any:
    """The JSON-RPC error answering one unreadable line (the id is the line's own when it names a valid one)."""
    from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    errors = exc.errors() if hasattr(exc, "errors") else []
    if not errors or any(e.get("type") == "json_invalid" for e in errors):
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
    given = next((e.get("input") for e in errors if isinstance(e.get("input"), dict)), None)
    rid = given.get("id") if isinstance(given, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        rid = None
    message = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=INVALID_REQUEST, message=message))


async def _serve_stdio(server: MCPServer) -> None:
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server  # the SDK's own run_stdio_async does the same, with the raw read side
    async with stdio_server() as (read, write):
        await low.run(_Answering(read, write), write, low.create_initialization_options())


def serve() -> None:
    """Run on stdio until the client hangs up."""
    import anyio

    _register_session()
    anyio.run(_serve_stdio, build_server())
