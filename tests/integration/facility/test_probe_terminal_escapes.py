"""A user's job output never drives the terminal of whoever reads it (an admin's `frontdesk logs`, `report`).

A job's stdout, its report's excerpt and its name are its user's bytes. Before, the CLI wrote them to the
reader's terminal as they were: an escape sequence in alice's output set the admin's window title or clipboard
(OSC 0 / OSC 52), cleared or faked the screen. Now text for a terminal shows control characters (`^[`);
`--json` and text for a pipe stay as they were. Real users, a root facility gateway and a real pseudo-terminal;
the sequences are harmless ones (a title, a clear screen).
"""

from __future__ import annotations

import json
import os
import pwd
import select
import subprocess
import time

from facility_helpers import SYSTEM_PY, Facility, user_env

ADMIN = "fdadmin-user"
ESC = b"\x1b"


def _on_a_terminal(fac: Facility, user: str, *args: str) -> bytes:
    """The CLI as `user` with its stdout and stderr on a pseudo-terminal: the bytes the terminal got."""
    master, slave = os.openpty()
    env = user_env(user, **fac.env())
    try:
        proc = subprocess.Popen(
            ["runuser", "-u", user, "--", *env, SYSTEM_PY, "-m", "frontdesk.cli.main", *args],
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            cwd="/tmp",
            start_new_session=True,
        )
        os.close(slave)
        out, deadline = b"", time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the other side is closed
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
        return out
    finally:
        os.close(master)


def test_a_jobs_escape_sequences_reach_no_readers_terminal(facility: Facility) -> None:
    assert pwd.getpwnam(ADMIN)
    script = (
        r"printf 'start\033]0;fdprobe-title\007mid\033[2Jend\n'; printf 'err\033]52;c;ZmRwcm9iZQ==\007\n' >&2; exit 3"
    )
    body = {"spec": {"command": ["sh", "-c", script], "name": "fdprobe-esc"}, "context": {"cwd": "/tmp"}}
    status, job = facility.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, job
    jid = str(job["id"])
    assert facility.probe("alice", [{"method": "POST", "path": "/v1/wait", "body": {"ids": [job["id"]]}}])[0][0] == 200
    for args in (("logs", jid), ("logs", jid, "--stderr"), ("report", jid), ("wait", jid)):
        seen = _on_a_terminal(facility, ADMIN, *args)
        assert b"start" in seen or b"err" in seen or b"fdprobe-esc" in seen, (args, seen)
        assert ESC not in seen and b"\x07" not in seen, (args, seen)
        if args[0] == "logs":  # the raw log, shown escaped; a report drops escapes when built (build.visible_text)
            assert b"^[" in seen, (args, seen)
    # --json and a pipe keep the bytes as they were (for programs and files)
    r = facility.cli(ADMIN, "logs", jid, "--json")
    assert r.returncode == 0 and "\x1b]0;fdprobe-title\x07" in "".join(json.loads(r.stdout)["lines"]), r.stdout
    r = facility.cli(ADMIN, "logs", jid)
    assert "\x1b[2J" in r.stdout, r.stdout
