"""The failure-memory campaign through a real gateway, real jobs on the embedded backend, and the real CLI.

Three principals reach the gateway over TCP with their own bearer tokens (`[gateway.tokens]`): alice and
carol are in the lab `physics`, bob is not.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontdesk.client import Client
from frontdesk.errors import NotFound
from token_gateway import token_gateway
from unix_users import scratch_dir

# Jobs run as their submitter's Unix user (alice, bob, carol here), who cannot read this venv or pytest's
# tmp_path: the jobs use the system Python and a world-readable working directory.
PY = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
# DELAY (in the spec's env, which is not part of the command template) keeps the jobs that only check
# what the submitter is told from running into memory before the test cancels them.
OOM_CMD = [
    PY,
    "-c",
    "import os, time; time.sleep(float(os.environ.get('DELAY', '0'))); "
    "x = bytearray(400 * 1024 * 1024); time.sleep(0.3)",
]


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A working directory every user can enter, with a space and a quote in its path."""
    with scratch_dir("fd-mem-") as top:
        d = top / "work dir 'quoted'"
        d.mkdir(mode=0o755)
        yield d


@pytest.fixture
def lab(gateway_factory: Any) -> Any:
    return token_gateway(
        gateway_factory, ("alice", "carol", "bob"), extra='[memory.labs]\nphysics = ["alice", "carol"]\n'
    )


def _submit(client: Client, memory: str, session: str, workdir: Path, delay: float = 0) -> dict[str, Any]:
    spec = {
        "name": "fit",
        "command": OOM_CMD,
        "resources": {"memory": memory, "walltime": "1m"},
        "env": {"DELAY": str(delay)},
    }
    return client.submit(spec=spec, context={"session": session, "cwd": str(workdir)})


def _memory_notices(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The lesson notices of a submit answer."""
    return [n for n in job.get("notices", []) if n["source"] == "memory" and "lesson_id" in n]


def _advice_notices(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in job.get("notices", []) if n["source"] == "memory" and "advice" in n]


def _cli(gw: Any, user: str, *args: str) -> Any:
    return gw.cli("memory", *args, env={"FRONTDESK_URL": gw.url, "FRONTDESK_TOKEN": f"tok-{user}"})


def test_campaign_fix_reaches_a_fresh_session_and_only_the_lab(lab: Any, workdir: Path) -> None:
    alice, carol, bob = lab.as_user["alice"], lab.as_user["carol"], lab.as_user["bob"]

    # Session 1: the job runs out of memory; the report carries the signature and the new lesson.
    first = _submit(alice, "100M", "session-1", workdir)
    assert _memory_notices(first) == []
    rep = alice.wait([first["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "OUT_OF_MEMORY", rep["text"]
    mem = rep["extra"]["memory"]
    assert mem["signature"]["kind"] == "host_oom"
    assert mem["signature"]["key"] == "OUT_OF_MEMORY:host_oom:"
    lesson_id = mem["lessons"][0]["id"]
    assert mem["lessons"][0]["fix"] is None

    # Session 1 again: a larger request completes; the change is learned as the fix, with evidence.
    second = _submit(alice, "1G", "session-1", workdir)
    rep = alice.wait([second["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "COMPLETED", rep
    learned = rep["extra"]["memory"]["lessons"][0]
    assert learned["id"] == lesson_id
    assert learned["fix"]["changes"]["memory_bytes"] == [100 * 1024**2, 1024**3]
    assert learned["fix"]["evidence"] == [first["id"], second["id"]]
    assert rep["extra"]["memory"]["signature"] is None and rep["extra"]["memory"]["matched"] == []

    # A fresh session of the same user is told the fix in the submit answer, before the job runs.
    third = _submit(alice, "100M", "session-2", workdir, delay=60)
    notes = _memory_notices(third)
    assert len(notes) == 1 and notes[0]["fact"] is True
    assert "ended OUT_OF_MEMORY once at 100M" in notes[0]["text"]
    assert "it completed with memory 1G" in notes[0]["text"]
    assert f"(job {second['id']})" in notes[0]["text"]
    assert notes[0]["text"] in third["warnings"]
    advice = _advice_notices(third)  # and what the completed run really used
    assert len(advice) == 1 and "asked for 1G memory, used at most" in advice[0]["text"]
    assert 100 * 1024**2 < advice[0]["advice"]["memory_bytes"] < 1024**3
    alice.cancel(third["id"])
    # ... and so does the real CLI of yet another session, on stderr, before it returns the job id.
    env = {"FRONTDESK_URL": lab.url, "FRONTDESK_TOKEN": "tok-alice", "FRONTDESK_SESSION": "session-3"}
    r = lab.cli(
        "run",
        "--name",
        "fit",
        "--mem",
        "100M",
        "--time",
        "1m",
        "--env",
        "DELAY=60",
        "--",
        *OOM_CMD,
        cwd=workdir,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert (
        "frontdesk: warning: memory: this command ended OUT_OF_MEMORY once at 100M (ran out of host "
        "memory); it completed with memory 1G on "
    ) in r.stderr
    alice.cancel(int(r.stdout.strip()))

    # bob is not in the lab: told nothing, finds nothing, cannot open the lesson.
    b = _submit(bob, "100M", "bob-1", workdir, delay=60)
    assert _memory_notices(b) == [] and _advice_notices(b) == []
    bob.cancel(b["id"])
    assert bob.request("GET", "/v1/memory/search?q=memory")["lessons"] == []
    with pytest.raises(NotFound):
        bob.request("GET", f"/v1/memory/lessons/{lesson_id}")

    # Before promotion carol (in the lab) sees nothing either: lessons start in the user scope.
    c = _submit(carol, "100M", "carol-1", workdir, delay=60)
    assert _memory_notices(c) == []
    carol.cancel(c["id"])

    # alice promotes it to the lab with the real CLI; carol is told, bob still is not.
    r = _cli(lab, "alice", "promote", str(lesson_id), "--scope", "lab", "--json")
    assert r.returncode == 0, r.stderr
    promoted = json.loads(r.stdout)
    assert promoted["scope"] == "lab" and promoted["scope_name"] == "physics"
    prov = promoted["provenance"]
    assert prov["origin_id"] == lesson_id and prov["promoted_by"] == "alice" and prov["source"] == "scheduler"
    assert prov["pending_by"] == "alice"  # one member only proposes: carol is told nothing yet
    c = _submit(carol, "100M", "carol-1b", workdir, delay=60)
    assert _memory_notices(c) == []
    carol.cancel(c["id"])
    r = _cli(lab, "carol", "promote", str(promoted["id"]), "--scope", "lab")  # the second member approves it
    assert r.returncode == 0 and "approved" in r.stdout, (r.stdout, r.stderr)
    c = _submit(carol, "100M", "carol-2", workdir, delay=60)
    notes = _memory_notices(c)
    assert len(notes) == 1 and "it completed with memory 1G" in notes[0]["text"]
    assert notes[0]["scope"] == "lab"
    carol.cancel(c["id"])
    b = _submit(bob, "100M", "bob-2", workdir, delay=60)
    assert _memory_notices(b) == [] and _advice_notices(b) == []
    bob.cancel(b["id"])
    r = _cli(lab, "bob", "show", str(promoted["id"]), "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["error"] == "not_found"
    r = _cli(lab, "bob", "promote", str(lesson_id), "--scope", "lab", "--name", "physics")
    assert r.returncode == 3

    # The CLI's search and show for a member.
    r = _cli(lab, "carol", "search", "host", "memory", "--json")
    found = json.loads(r.stdout)["lessons"]
    assert [x["id"] for x in found] == [promoted["id"]]
    r = _cli(lab, "alice", "show", str(lesson_id))
    assert r.returncode == 0 and "fix:" in r.stdout and "source: scheduler by alice" in r.stdout


def test_cli_classify_works_without_a_gateway(tmp_path: Path) -> None:
    import subprocess

    log = tmp_path / "slurm-42.out"
    log.write_text(
        "step 10\nslurmstepd: error: *** JOB 42 ON cn1 CANCELLED AT 2026-12-01T00:00:00 DUE TO TIME LIMIT ***\n"
    )
    env = {"FRONTDESK_SOCKET": str(tmp_path / "none.sock"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "memory", "classify", str(log), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kind"] == "walltime" and out["matcher"] == "slurm-time-limit"
    assert "DUE TO TIME LIMIT" in out["line"]
    assert out["next_step"].startswith("request a longer walltime")
    # the text form says the next step too, specific where the log names the cause
    log.write_text("Traceback (most recent call last):\nModuleNotFoundError: No module named 'flash_attn'\n")
    r = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "memory", "classify", str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "missing_import: a Python module is not installed: flash_attn" in r.stdout
    assert "next: install `flash_attn` in the job's environment" in r.stdout
