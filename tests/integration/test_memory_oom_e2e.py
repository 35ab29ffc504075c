"""End to end on the embedded backend (memory limits enforced by a cgroup): an OOM job, its report's suggested
`--mem` followed, the job completes, and a fresh session running the same script spelled another way is told.

Jobs run as their submitter's Unix user (alice): they use the system Python and a world-readable directory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontdesk.client import Client
from token_gateway import token_gateway
from unix_users import scratch_dir

PY = "/usr/bin/python3"
SCRIPT = """\
import os, time
time.sleep(float(os.environ.get("DELAY", "0")))
data = b"x" * (int(os.environ.get("MB", "200")) * 1024 * 1024)  # resident: every page written
time.sleep(0.2)
print("done", len(data))
"""

pytestmark = pytest.mark.skipif(not Path(PY).exists(), reason="needs the system python3")


@pytest.fixture
def jobdir() -> Iterator[Path]:
    with scratch_dir("fd-oom-") as top:
        (top / "oom.py").write_text(SCRIPT)
        (top / "oom.py").chmod(0o644)
        yield top


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    gw = token_gateway(gateway_factory, ("alice",))
    gw.alice = gw.as_user["alice"]
    return gw


def _run(gw: Any, alice: Client, command: list[str], mem: str, session: str, cwd: Path) -> dict[str, Any]:
    spec = {"name": "oom", "command": command, "resources": {"memory": mem, "walltime": "2m"}, "env": {"MB": "200"}}
    job = alice.submit(spec=spec, context={"session": session, "cwd": str(cwd)})
    report: dict[str, Any] = alice.wait([job["id"]], "all", 120)["reports"][0]
    return report


def _cli_run(gw: Any, session: str, cwd: Path, *command: str) -> Any:
    env = {"FRONTDESK_URL": gw.url, "FRONTDESK_TOKEN": "tok-alice", "FRONTDESK_SESSION": session}
    return gw.cli(
        "run", "--json", "--mem", "150M", "--time", "2m", "--env", "DELAY=60", "--env", "MB=200", "--", *command,
        cwd=cwd, env=env,
    )  # fmt: skip


def test_oom_then_the_suggested_mem_completes_and_a_fresh_session_is_told(gw: Any, jobdir: Path) -> None:
    # Session 1: 150M is not enough for 200M of data; the cgroup kills the job at its limit.
    first = _run(gw, gw.alice, [PY, "-u", "./oom.py"], "150M", "s1", jobdir)
    assert first["state"] == "OUT_OF_MEMORY", first["text"]
    cls = first["classification"]
    assert cls["kind"] == "host_oom"
    suggested = re.search(r"--mem (\S+) \(([^)]*)\)", cls["next_step"])
    assert suggested is not None, cls["next_step"]
    assert "twice the limit" in suggested.group(2)  # killed at its limit: the peak says nothing more
    assert first["extra"]["memory"]["suggest"]["basis"].startswith("twice the limit")

    # The suggestion followed: it completes, and the change is learned as the lesson's fix.
    second = _run(gw, gw.alice, [PY, "-u", "./oom.py"], suggested.group(1), "s1", jobdir)
    assert second["state"] == "COMPLETED", second["text"]
    [learned] = second["extra"]["memory"]["lessons"]
    assert learned["fix"]["evidence"] == [first["job_id"], second["job_id"]]

    # A fresh session, the same script by another spelling (no -u, its absolute path): told before it runs.
    r = _cli_run(gw, "s2", jobdir, PY, str(jobdir / "oom.py"))
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    [notice] = [n for n in answer["notices"] if n.get("lesson_id") == learned["id"]]
    assert notice["matched_by"] == "template" and "quiet" not in notice
    assert "this command ended OUT_OF_MEMORY once at 150M" in notice["text"]
    assert f"it completed with memory {suggested.group(1)}" in notice["text"]
    assert "[matched: the same command template `python oom.py`]" in notice["text"]
    assert notice["text"] in r.stderr  # the person at the terminal reads it too
    gw.alice.cancel(answer["id"])

    # The same session again, a third spelling: the notice is in the JSON, marked quiet, and not printed again.
    r = _cli_run(gw, "s2", jobdir, "python3", "./oom.py")
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    [again] = [n for n in answer["notices"] if n.get("lesson_id") == learned["id"]]
    assert again["quiet"] is True and again["text"] not in r.stderr
    gw.alice.cancel(answer["id"])


def test_a_failed_jobs_report_names_its_kind_and_a_specific_next_step(gw: Any, jobdir: Path) -> None:
    """The report (text and JSON), its lesson and the MCP-facing search all carry the kind's next step."""
    command = [PY, "-c", "import numpy_but_not_installed_here"]
    job = gw.alice.submit(spec={"command": command}, context={"session": "s9", "cwd": str(jobdir)})
    rep = gw.alice.wait([job["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "FAILED"
    cls = rep["classification"]
    assert cls["kind"] == "missing_import" and cls["detail"] == "numpy_but_not_installed_here"
    assert cls["next_step"].startswith("install `numpy_but_not_installed_here` in the job's environment")
    assert f"next: {cls['next_step']}" in rep["text"]
    [lesson] = rep["extra"]["memory"]["lessons"]
    assert lesson["next_step"] == cls["next_step"]
    found = gw.alice.request("GET", "/v1/memory/search?kind=missing_import&state=FAILED")["lessons"]
    assert [x["id"] for x in found] == [lesson["id"]] and found[0]["next_step"] == cls["next_step"]
