"""With `private_jobs = false` others see a job's record as `squeue` shows it: never its command, script,
environment, working directory, output paths or agent session.

The site setting says "everyone sees others' job records (name, state, times), like squeue". Before, the
record others got was the owner's own: the whole spec (command line, script text, the spec's `env`, workdir,
sbatch output paths) and the owner's agent session id (enough to squat it). Real users on a root facility
gateway; the values are canaries, and every route that hands a record to a user is asked.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from facility_helpers import Facility

FACILITY_ACCESS = "private_jobs = false\n"


def test_others_see_a_record_without_what_only_its_owner_may_read(facility: Facility) -> None:
    marks = {k: f"fdprobe-{k}-{secrets.token_hex(6)}" for k in ("arg", "env", "dir", "sess", "ctx", "out", "gone")}
    workdir = Path(f"/tmp/{marks['dir']}")
    workdir.mkdir(mode=0o777)
    workdir.chmod(0o777)
    spec = {
        "name": "fdprobe-public",
        "command": ["sh", "-c", f"sleep 60 # {marks['arg']}"],
        "env": {"FDPROBE_SPEC_VALUE": marks["env"]},
        "workdir": f"/tmp/{marks['dir']}",
        "session": marks["sess"],
        "slurm": {"output": f"/tmp/{marks['out']}.out"},
        "resources": {"cpus": 1},
    }
    body = {"spec": spec, "context": {"cwd": "/tmp", "env": {"FDPROBE_CTX": marks["ctx"]}}}
    failing = {"spec": {"command": ["true"], "workdir": f"/tmp/{marks['gone']}"}, "context": {"cwd": "/tmp"}}
    (status, job), (status2, bad) = facility.probe(
        "alice",
        [{"method": "POST", "path": "/v1/jobs", "body": body}, {"method": "POST", "path": "/v1/jobs", "body": failing}],
    )
    assert status == 200 and status2 == 200, (job, bad)
    jid = job["id"]
    try:
        for _ in range(300):  # the second one fails at once; its reason names the missing directory
            if facility.root_client().request("GET", f"/v1/jobs/{bad['id']}").get("ended_at"):
                break
            time.sleep(0.1)
        calls_bad = {"method": "GET", "path": f"/v1/jobs/{bad['id']}"}
        calls: list[dict[str, Any]] = [
            {"method": "GET", "path": f"/v1/jobs/{jid}"},
            {"method": "GET", "path": "/v1/jobs?principal=alice"},
            {"method": "GET", "path": "/v1/jobs"},
            {"method": "GET", "path": "/v1/queue"},
            calls_bad,
            {"method": "GET", "path": f"/v1/jobs?session={marks['sess']}"},
        ]
        got = facility.probe("carol", calls)
        assert [g[0] for g in got] == [200, 200, 200, 200, 200, 200], got
        assert got[5][1] == [], got[5]  # filtering by alice's session tells nothing either
        assert got[4][1]["state"] == "FAILED", got[4]
        record = got[0][1]
        assert (record["id"], record["name"], record["principal"]) == (jid, "fdprobe-public", "alice"), record
        assert record["state"] in ("PENDING", "RUNNING") and "submitted_at" in record, record
        assert jid in [j["id"] for j in got[1][1]] and jid in [j["id"] for j in got[3][1]["jobs"]], got
        text = json.dumps(got)
        leaked = [k for k, v in marks.items() if v in text]
        assert leaked == [], f"carol read alice's {leaked}: {record}"
        # the owner still reads all of it
        mine = facility.probe("alice", calls[:1])[0][1]
        assert mine["spec"]["env"] == {"FDPROBE_SPEC_VALUE": marks["env"]} and mine["session"] == marks["sess"]
    finally:
        facility.probe("alice", [{"method": "POST", "path": f"/v1/jobs/{jid}/cancel", "body": {}}])
        shutil.rmtree(workdir, ignore_errors=True)
