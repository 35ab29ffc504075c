"""Planted secrets through a real gateway: a real job prints every case of the secret corpus, and none of them
reaches the report, the events, the lessons, a promoted lesson or the bytes of the database file and its WAL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from token_gateway import token_gateway
from unix_users import scratch_dir

CORPUS = Path(__file__).parents[1] / "data" / "logs" / "secrets" / "corpus.jsonl"
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _pieces(secret: str) -> set[str]:
    """The secret and every 12-character piece of it, lower-cased (a lower-cased copy is a leak too)."""
    sec = secret.lower()
    return {sec[i : i + 12] for i in range(len(sec) - 11)} if len(sec) > 12 else {sec}


def _leaked(blob: str) -> list[str]:
    low = blob.lower()
    return [c["secret"] for c in CASES if any(p in low for p in _pieces(c["secret"]))]


def report_path(gw: Any, job_id: int) -> str:
    return str(gw.alice.request("GET", f"/v1/jobs/{job_id}/logs?stream=stderr&tail=1")["path"])


@pytest.fixture
def lab(gateway_factory: Any) -> Any:
    gw = token_gateway(
        gateway_factory, ("alice",), ("carol", "bob"), extra='[memory.labs]\nphysics = ["alice", "carol"]\n'
    )
    gw.alice = gw.as_user["alice"]
    return gw


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the job can read whichever Unix user it runs as (pytest's tmp_path is root's, mode 0700)."""
    with scratch_dir("fd-secrets-") as path:
        yield path


def test_planted_secrets_reach_no_report_event_lesson_or_database_byte(lab: Any, shared_dir: Path) -> None:
    tmp_path = shared_dir
    planted = tmp_path / "planted.txt"
    # Every case on stdout and on stderr, then the decisive error line holding secrets of several kinds.
    final = next(c for c in CASES if c["note"] == "in an exception" and c["kind"] == "aws-access-key")["text"]
    final2 = next(c for c in CASES if c["note"] == "in an exception" and c["kind"] == "password")["text"]
    planted.write_text("\n".join(c["text"] for c in CASES) + "\n")
    (tmp_path / "final.txt").write_text(f"{final2}\n{final}\n")
    for f in (planted, tmp_path / "final.txt"):
        f.chmod(0o644)
    # the secrets live in files only: the command (stored as the job's spec, which must run) holds none
    # sh, not this venv's python: the job runs as the submitter's Unix user, who may not read the venv
    script = 'cat "$1"; cat "$1" >&2; cat "$2" >&2; exit 3'
    command = ["/bin/sh", "-c", script, "sh", str(planted), str(tmp_path / "final.txt")]
    spec = {"name": "leaky", "command": command, "resources": {"walltime": "1m"}}
    job = lab.alice.submit(spec=spec, context={"session": "s-secrets", "cwd": str(tmp_path)})
    report = lab.alice.wait([job["id"]], "all", 60)["reports"][0]
    assert report["state"] == "FAILED"
    # the job really printed them (its own log files hold them); the logs endpoint shows them masked
    assert all(c["secret"] in Path(report_path(lab, job["id"])).read_text() for c in CASES), report["text"]
    logs = lab.alice.request("GET", f"/v1/jobs/{job['id']}/logs?stream=stderr&tail=500")
    assert "«redacted:" in json.dumps(logs, ensure_ascii=False)
    assert _leaked(json.dumps(logs, ensure_ascii=False)) == []

    sig = report["extra"]["memory"]["signature"]
    assert sig["kind"] == "exit_error" and "«redacted:aws-access-key:" in sig["key"]
    assert _leaked(json.dumps(report, ensure_ascii=False)) == []
    assert _leaked(json.dumps(lab.alice.report(job["id"]), ensure_ascii=False)) == []

    events = list(lab.alice.events(since=0, job=job["id"]))
    assert {e["kind"] for e in events} >= {"job.report", "memory.lesson"}
    assert _leaked(json.dumps(events, ensure_ascii=False)) == []
    everything = list(lab.client.events(since=0))  # the owner's view: every event of the gateway
    assert len(everything) >= len(events) and _leaked(json.dumps(everything, ensure_ascii=False)) == []

    [lesson] = report["extra"]["memory"]["lessons"]
    shown = lab.alice.request("GET", f"/v1/memory/lessons/{lesson['id']}")
    assert _leaked(json.dumps(shown, ensure_ascii=False)) == []
    found = lab.alice.request("GET", "/v1/memory/search?q=redacted")["lessons"]
    assert [x["id"] for x in found] == [lesson["id"]]
    promoted = lab.alice.request("POST", f"/v1/memory/lessons/{lesson['id']}/promote", {"scope": "lab"})
    assert promoted["scope"] == "lab"
    assert _leaked(json.dumps(promoted, ensure_ascii=False)) == []

    # The database's bytes while it runs (the WAL holds the newest pages), then after a clean stop.
    running = [p for p in lab.home.glob("frontdesk.db*") if p.is_file()]
    blob = b"".join(p.read_bytes() for p in running).decode("utf-8", "replace")
    lab.stop()
    stopped = [p for p in lab.home.glob("frontdesk.db*") if p.is_file()]
    assert lab.home / "frontdesk.db" in stopped
    blob += b"".join(p.read_bytes() for p in stopped).decode("utf-8", "replace")
    assert "«redacted:aws-access-key:" in blob
    assert _leaked(blob) == []
