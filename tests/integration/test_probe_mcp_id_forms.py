"""The MCP tools take a job id as digits only: an agent writing Slurm's `12_3` (task 3 of array 12) got job 123
cancelled (the tool's `int` argument took `_` as a digit separator). Real `frontdesk mcp` on its stdio."""

from __future__ import annotations

import json
from typing import Any

from test_probe_mcp_wire import _call, _Wire


def test_a_slurm_task_spelling_cancels_no_other_job(gateway: Any) -> None:
    wire = _Wire(gateway)
    ids: list[int] = []
    try:
        for n in range(10):
            sub = _call(wire, 100 + n, "submit", {"command": "sleep 300"})
            ids.append(json.loads(sub["result"]["content"][0]["text"])["job"]["id"])
        target = max(ids)  # >= 10: `1_0` for job 10
        form = f"{str(target)[:-1]}_{str(target)[-1]}"
        for n, (tool, args) in enumerate(
            [("cancel", {"job_id": form}), ("logs", {"job_id": form}), ("report", {"job_id": form}),
             ("wait", {"job_ids": [form], "timeout_s": 0})], start=200,
        ):  # fmt: skip
            got = _call(wire, n, tool, args)
            assert "result" not in got or got["result"]["isError"] is True, (tool, got)
            assert "digits" in json.dumps(got), got
        states = gateway.client.request("GET", f"/v1/jobs/{target}")["state"]
        assert states in ("PENDING", "RUNNING"), states
    finally:
        for job_id in ids:
            if gateway.client.request("GET", f"/v1/jobs/{job_id}").get("ended_at") is None:
                gateway.client.request("POST", f"/v1/jobs/{job_id}/cancel")
        wire.close()
