"""One user's open connections cannot use up a facility gateway's file descriptors (it then answered nobody).

fdpr27a holds more idle connections than MAX_PER_PEER; the ones over the cap get a one-line 429 and are closed,
while root and another user are still answered; once fdpr27a closes them, fdpr27a is answered again.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

from facility_helpers import SYSTEM_PY, Facility, user_env

from frontdesk.api.connection import MAX_PER_PEER
from unix_users import ensure_user, reachable

HOG = Path(__file__).with_name("conn_hog.py")


def test_one_users_connections_are_capped_and_the_others_still_answered(facility: Facility) -> None:
    ensure_user("fdpr27a")
    ensure_user("fdpr27b")
    hog_script = str(reachable(HOG))  # run as fdpr27a: the checkout may sit under a 0700 directory
    argv = ["runuser", "-u", "fdpr27a", "--", *user_env("fdpr27a"), SYSTEM_PY, hog_script, str(facility.socket)]
    hog = subprocess.Popen(
        [*argv, str(MAX_PER_PEER + 40)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/tmp"
    )
    assert hog.stdin is not None and hog.stdout is not None
    try:
        counts = json.loads(hog.stdout.readline())
        assert counts == {"held": MAX_PER_PEER, "refused": 40}, counts
        assert facility.root_client().health()["ok"]
        other = facility.cli("fdpr27b", "jobs", "--json")
        assert other.returncode == 0, other.stderr
        refused = facility.cli("fdpr27a", "jobs", "--json")
        assert refused.returncode != 0 and "too many open connections" in refused.stderr, refused
    finally:  # a hog that died early must not hide the failure nor outlive the test (a later test's warning)
        with contextlib.suppress(BrokenPipeError):
            hog.stdin.write("\n")
            hog.stdin.close()
        try:
            hog.wait(timeout=60)
        finally:
            hog.kill()
            hog.wait()
            hog.stdout.close()
    again = facility.cli("fdpr27a", "jobs", "--json")
    assert again.returncode == 0, again.stderr
