"""The MCP server's recent reports are the caller's own, also where every user lists everyone's jobs.

Before, `frontdesk://reports/recent` listed the 50 newest jobs the caller may list and asked for the report of
each ended one: under `[access] private_jobs = false` those were mostly other users' jobs, each report refused
and journalled (`access.denied`, up to ten per read), and the caller's own reports dropped out of the ten. Now the
listing asks for the caller's own ended jobs. Real users (alice; carol, no labmate of hers) and a root facility
gateway; the MCP server runs as alice over stdio (runuser).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from facility_helpers import SYSTEM_PY, Facility, user_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters

FACILITY_ACCESS = "private_jobs = false\n"


def _ended(fac: Facility, user: str, commands: list[str]) -> list[int]:
    calls = [
        {
            "method": "POST",
            "path": "/v1/jobs",
            "body": {"spec": {"command": ["sh", "-c", c]}, "context": {"cwd": "/tmp"}},
        }
        for c in commands
    ]
    ids = [int(a["id"]) for _, a in fac.probe(user, calls)]
    wait = {"method": "POST", "path": "/v1/wait", "body": {"ids": ids, "mode": "all", "timeout": 60}}
    assert fac.probe(user, [wait])[0][1]["done"]
    return ids


def _denials(fac: Facility) -> int:
    got = fac.root_client().request("GET", "/v1/events?kind=access.denied")
    return len(got)


def _recent_as(fac: Facility, user: str) -> str:
    env = {"FRONTDESK_SITE_CONFIG": str(fac.site), "FRONTDESK_NO_AUTOSTART": "1"}
    cmd = user_env(user, **env)
    params = StdioServerParameters(
        command="runuser", args=["-u", user, "--", *cmd, SYSTEM_PY, "-m", "frontdesk.cli.main", "mcp"], cwd="/tmp"
    )

    async def go() -> str:
        async with Client(params) as c:
            got: Any = await c.read_resource("frontdesk://reports/recent")
            return "".join(getattr(x, "text", "") for x in got.contents)

    return asyncio.run(asyncio.wait_for(go(), 120))


def test_recent_reports_are_the_callers_own(facility: Facility) -> None:
    (own,) = _ended(facility, "alice", ["echo ALICE-OWN-REPORT"])
    _ended(facility, "carol", [f"echo CAROL-{i}" for i in range(12)])  # ended after alice's, listed to her
    before = _denials(facility)
    text = _recent_as(facility, "alice")
    assert f"frontdesk job {own}" in text and "ALICE-OWN-REPORT" in text, text
    assert "CAROL" not in text
    assert _denials(facility) == before, json.dumps(
        facility.root_client().request("GET", "/v1/events?kind=access.denied")[-3:]
    )
