"""A session's tmux pane is typed into only when that pane's server is the session's own user's.

A submission names its session's reach (tmux socket, pane, agent pid) itself; a root gateway runs tmux as
root, so without a check user B could name user A's tmux socket and the pid of A's shell, and B's job report
(B's text) would be typed into A's shell and run as A. The canary: A's pane runs `cat` into a file A owns;
nothing of B's may reach it (harmless if it does: cat only writes the text down).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from facility_helpers import Facility

from unix_users import ensure_user

A, B = "fdpr27a", "fdpr27b"
MARK = "fdpr27-typed-by-b"


@pytest.fixture
def pane(facility: Facility) -> Iterator[tuple[Path, str, int, Path]]:
    """A's tmux server and pane running `cat > typed` (socket, pane id, cat's pid, the file)."""
    if not shutil.which("tmux"):
        pytest.skip("needs tmux")
    a = ensure_user(A)
    ensure_user(B)
    d = Path(tempfile.mkdtemp(prefix="fdpr27-tmux-", dir="/tmp"))
    os.chown(d, a.pw_uid, a.pw_gid)
    d.chmod(0o700)
    sock, typed = d / "sock", d / "typed"
    as_a = ["runuser", "-u", A, "--", "env", "-i", "PATH=/usr/bin:/bin", f"HOME={d}", "TERM=xterm"]
    subprocess.run([*as_a, "tmux", "-S", str(sock), "new-session", "-d", f"exec cat > {typed}"], check=True)
    try:
        out = subprocess.run(
            [*as_a, "tmux", "-S", str(sock), "display-message", "-p", "-t", "%0", "#{pane_pid}"],
            check=True,
            capture_output=True,
            text=True,
        )
        yield sock, "%0", int(out.stdout.strip()), typed
    finally:
        subprocess.run([*as_a, "tmux", "-S", str(sock), "kill-server"], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def test_another_users_tmux_pane_is_never_typed_into(facility: Facility, pane: tuple[Path, str, int, Path]) -> None:
    sock, pane_id, pid, typed = pane
    sid = str(uuid.uuid4())
    context = {"session": sid, "harness": "claude-code", "cwd": "/tmp"}
    context |= {"tmux_socket": str(sock), "tmux_pane": pane_id, "agent_pid": pid}
    body = {"spec": {"command": ["echo", MARK], "workdir": "/tmp"}, "context": context}
    status, rec = facility.probe(B, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    facility.ended(rec["id"], timeout=60)
    status, session = facility.probe(B, [{"method": "GET", "path": f"/v1/sessions/{sid}"}])[0]
    assert status == 200, session
    time.sleep(8)  # the channel waits for an idle pane (tmux_idle_s) before it would type: give it the time
    assert MARK not in typed.read_text(errors="replace"), "B's report was typed into A's pane"
    assert "tmux" not in json.dumps(session.get("last_channel") or ""), session
    assert f"tmux: the tmux socket is not {B}'s: never typed into" in session["channels"], session["channels"]


def test_the_users_own_pane_is_typed_into_by_a_tmux_client_running_as_them(
    facility: Facility, pane: tuple[Path, str, int, Path]
) -> None:
    """The root gateway drops to the session's user for its tmux client, and still reaches their pane."""
    sock, pane_id, pid, typed = pane
    sid = str(uuid.uuid4())
    context = {"session": sid, "harness": "claude-code", "cwd": "/tmp"}
    context |= {"tmux_socket": str(sock), "tmux_pane": pane_id, "agent_pid": pid}
    body = {"spec": {"command": ["echo", "fdpr27-own-report"], "workdir": "/tmp"}, "context": context}
    status, rec = facility.probe(A, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    deadline = time.monotonic() + 60
    while "fdpr27-own-report" not in typed.read_text(errors="replace"):
        assert time.monotonic() < deadline, (typed.read_text(errors="replace"), facility.log()[-2000:])
        time.sleep(0.5)
