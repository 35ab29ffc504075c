"""`frontdesk mcp` over a real stdio connection, driven by the official MCP SDK's own client."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

TOOLS = {"submit", "queue", "cluster", "wait", "report", "logs", "cancel", "memory_search", "fs"}


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _params(gw: Any, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "frontdesk.cli.main", "mcp"],
        env={k: v for k, v in {**gw.env, **env}.items() if v is not None},
    )


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_tools_and_resources_are_listed(gateway: Any) -> None:
    async def go() -> None:
        async with Client(_params(gateway)) as c:
            tools = await c.list_tools()
            assert {t.name for t in tools.tools} == TOOLS
            submit = next(t for t in tools.tools if t.name == "submit")
            assert "command" in submit.input_schema["properties"]
            res = await c.list_resources()
            assert "frontdesk://reports/recent" in {str(r.uri) for r in res.resources}
            templates = await c.list_resource_templates()
            assert "frontdesk://reports/{job_id}" in {t.uri_template for t in templates.resource_templates}

    _run(go())


def test_submit_wait_report_logs_queue_cancel(gateway: Any) -> None:
    sid = str(uuid.uuid4())

    async def go() -> None:
        async with Client(_params(gateway, CLAUDE_CODE_SESSION_ID=sid, CLAUDECODE="1")) as c:
            sub = json.loads(
                _text(await c.call_tool("submit", {"command": "sh -c 'echo mcp-says-hi'", "name": "hello"}))
            )
            job = sub["job"]["id"]
            assert sub["job"]["session"] == sid
            waited_res = await c.call_tool("wait", {"job_ids": [job], "timeout_s": 60})
            assert waited_res.structured_content is None  # readable text only, no JSON-in-a-string copy
            waited = _text(waited_res)
            assert waited.startswith(f"frontdesk job {job} (hello): COMPLETED") and "mcp-says-hi" in waited
            assert "\\n" not in waited and "\n" in waited
            rep = await c.call_tool("report", {"job_id": job})
            assert "mcp-says-hi" in _text(rep) and rep.structured_content is None
            assert "mcp-says-hi" in _text(await c.call_tool("logs", {"job_id": job, "tail": 5}))
            long = json.loads(_text(await c.call_tool("submit", {"command": "sleep 60"})))["job"]["id"]
            queue = json.loads(_text(await c.call_tool("queue", {})))
            assert [j["id"] for j in queue] == [long]
            cancelled = json.loads(_text(await c.call_tool("cancel", {"job_id": long})))
            assert cancelled["id"] == long
            recent = await c.read_resource("frontdesk://reports/recent")
            assert "mcp-says-hi" in "".join(getattr(x, "text", "") for x in recent.contents)
            one = await c.read_resource(f"frontdesk://reports/{job}")
            assert "mcp-says-hi" in "".join(getattr(x, "text", "") for x in one.contents)
            cluster = json.loads(_text(await c.call_tool("cluster", {})))
            assert isinstance(cluster, dict)
            mem = _text(await c.call_tool("memory_search", {"query": "CUDA out of memory"}))
            assert mem in ("no lesson matches", "the memory plug-in is not enabled on this gateway")

    _run(go())
    # the server registered the session it runs in, and what it read there is not delivered again
    s = gateway.client.request("GET", f"/v1/sessions/{sid}")
    assert s["harness"] == "claude-code"
    unread = gateway.client.request("GET", f"/v1/sessions/{sid}/unread")["reports"]
    assert {r["name"] for r in unread} <= {None}  # only the cancelled job's, never `hello`'s, which was read
    wakes = [e["data"] for e in gateway.client.events(since=0) if e["kind"] == "session.wake" and e["session"] == sid]
    assert [w["channel"] for w in wakes][:1] == ["read:mcp-wait"]


def test_server_version_and_memory_search_one_line_per_lesson(gateway: Any) -> None:
    from frontdesk import __version__

    for cause in ("CUDA out of memory in the forward pass", "CUDA out of memory during eval"):
        body = {"kind": "cuda_oom", "cause": cause, "fix": "halve the batch size", "application": "train.py"}
        gateway.client.request("POST", "/v1/memory/lessons", body)

    async def go() -> None:
        async with Client(_params(gateway)) as c:
            assert c.server_info.version == __version__ and c.server_info.name == "frontdesk"
            res = await c.call_tool("memory_search", {"query": "CUDA out of memory"})
            lines = _text(res).splitlines()
            assert res.structured_content is None and len(lines) == 2
            assert all(" [cuda_oom] CUDA out of memory" in x and "; fix: halve the batch size" in x for x in lines)
            assert all(len(x) < 200 for x in lines)

    _run(go())


def test_errors_are_tool_errors_with_the_gateway_message(gateway: Any) -> None:
    async def go() -> None:
        async with Client(_params(gateway)) as c:
            res = await c.call_tool("report", {"job_id": 99999})
            assert res.is_error and "99999" in _text(res)
            bad = await c.call_tool("submit", {})
            assert bad.is_error and "exactly one of command or spec_yaml" in _text(bad)

    _run(go())


def test_fs_tool_answers_from_the_gateway_within_the_sessions_budget(gateway: Any, tmp_path: Any) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("alpha\nbeta\n")
    (tmp_path / "d" / "b.txt").write_text("beta\n")
    sid = str(uuid.uuid4())

    async def go() -> None:
        params = _params(gateway, CLAUDE_CODE_SESSION_ID=sid, CLAUDECODE="1")
        params.cwd = str(tmp_path)
        async with Client(params) as c:
            got = _text(await c.call_tool("fs", {"op": "grep", "args": ["-rc", "beta", "d"]}))
            assert sorted(got.split()) == ["d/a.txt:1", "d/b.txt:1"]
            page = _text(await c.call_tool("fs", {"op": "find", "args": ["d", "-type", "f"], "limit": 1}))
            assert page.splitlines()[0] in ("d/a.txt", "d/b.txt") and "cursor=" in page
            bad = await c.call_tool("fs", {"op": "find", "args": ["d", "-delete"]})
            assert bad.is_error and "-delete" in _text(bad)

    _run(go())
    rows = gateway.client.request("GET", "/v1/fs/budget")["principals"]
    assert [r["admitted"] for r in rows if r["session"] == sid] == [3]
