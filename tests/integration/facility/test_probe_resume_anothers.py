"""Root may read any session, but resuming alice's runs alice's harness with alice's tree and opens the transcript
path alice's hook reported: root's `frontdesk sessions resume` refuses it (one line, exit 77), and even its dry run
never opens that path (here a FIFO of alice's, which hung root's CLI; a device would have been opened as root).
Root's `sessions suspend`/`drain` signals only a process of the session's own user (alice named bob's)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from facility_helpers import Facility


def _fifo_of(user: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix="fdrsm-", dir="/tmp"))
    d.chmod(0o755)
    fifo = d / "rollout.jsonl"
    os.mkfifo(fifo, 0o600)
    pw = pwd.getpwnam(user)
    os.chown(fifo, pw.pw_uid, pw.pw_gid)
    return fifo


def _root_cli(facility: Facility, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}, **facility.env()}
    cmd = [sys.executable, "-m", "frontdesk.cli.main", *args]
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=30, cwd="/tmp", stdin=subprocess.DEVNULL
    )


def test_root_neither_resumes_alices_session_nor_opens_her_transcript_path(facility: Facility) -> None:
    fifo = _fifo_of("alice")
    sid = "fdrsm-alice-1"
    hook = {
        "event": "SessionStart",
        "harness": "codex",
        "cwd": "/tmp",
        "reach": {"transcript_path": str(fifo), "thread_id": sid},
    }
    [[status, answer]] = facility.probe("alice", [{"method": "POST", "path": f"/v1/sessions/{sid}/hook", "body": hook}])
    assert status == 200, answer
    try:
        dry = _root_cli(facility, "sessions", "resume", sid, "--headless", "--dry-run", "--json")
    except subprocess.TimeoutExpired:
        raise AssertionError("root's dry run opened alice's FIFO and hung") from None
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["user"] == "alice" and plan["transcript_path"] == str(fifo)
    real = _root_cli(facility, "sessions", "resume", sid, "--headless")
    assert real.returncode == 77, (real.returncode, real.stdout, real.stderr)
    assert real.stderr.strip().count("\n") == 0 and "alice's" in real.stderr and "Traceback" not in real.stderr
    mine = facility.cli("alice", "sessions", "resume", sid, "--headless", "--dry-run", "--json")
    assert mine.returncode == 0 and json.loads(mine.stdout)["user"] == "alice", mine.stderr  # alice's own works


def test_root_suspend_signals_no_process_but_the_sessions_users(facility: Facility, tmp_path: Path) -> None:
    """alice's session names a process of bob's (a canary sleep) as its harness: root's suspend leaves it running."""
    canary = subprocess.Popen(["runuser", "-u", "bob", "--", "sleep", "300"])
    pid = 0
    try:
        pid = _sleeper_of(canary.pid)
        sid = "fdrsm-alice-2"
        hook = {"event": "SessionStart", "harness": "claude-code", "cwd": "/tmp", "reach": {"pid": pid}}
        [[status, answer]] = facility.probe(
            "alice", [{"method": "POST", "path": f"/v1/sessions/{sid}/hook", "body": hook}]
        )
        assert status == 200, answer
        got = _root_cli(facility, "sessions", "suspend", sid, "--json")
        assert got.returncode == 0, got.stderr
        out = json.loads(got.stdout)
        assert not out["signalled"] and "not alice's" in out["reason"], out
        assert canary.poll() is None and Path(f"/proc/{pid}").exists()  # bob's sleep still runs
    finally:
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # the canary this test started (gone when the old code signalled it)
        canary.kill()
        canary.wait()


def _sleeper_of(parent: int) -> int:
    """The pid of the `sleep` runuser started (its child), waiting until it exists."""
    for _ in range(200):
        kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        if kids:
            return int(kids[0])
        subprocess.run(["sleep", "0.05"])
    raise AssertionError("runuser started no child")
