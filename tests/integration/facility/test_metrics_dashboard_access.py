"""The dashboard on a root facility gateway: a user sees their own jobs only, an admin everyone's, and a
report page of someone else's job is refused (403). Each user fetches the page as themselves (SO_PEERCRED)."""

from __future__ import annotations

import secrets
from typing import Any

from facility_helpers import SYSTEM_PY, Facility, run_as

ADMIN = "fdadmin-user"
_FETCH = """
import http.client, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sys.argv[1])
c = C("localhost")
c.request("GET", sys.argv[2])
r = c.getresponse()
sys.stdout.write(str(r.status) + "\\n" + r.read().decode())
"""


def _page(fac: Facility, user: str, path: str) -> tuple[int, str]:
    out = run_as(user, [SYSTEM_PY, "-c", _FETCH, str(fac.socket), path])
    assert out.returncode == 0, out.stderr
    status, _, body = out.stdout.partition("\n")
    return int(status), body


def _submit(fac: Facility, user: str, name: str) -> int:
    body = {"spec": {"name": name, "command": ["true"]}, "context": {"cwd": "/tmp"}}
    answer = fac.probe(user, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert answer[0] == 200, answer
    return int(answer[1]["id"])


def test_a_user_sees_their_own_jobs_and_an_admin_everyones(facility: Facility) -> None:
    tag = secrets.token_hex(3)
    alice_job = _submit(facility, "alice", f"dash-alice-{tag}")
    carol_job = _submit(facility, "carol", f"dash-carol-{tag}")
    status, alice = _page(facility, "alice", "/")
    assert status == 200
    assert f"dash-alice-{tag}" in alice and f"dash-carol-{tag}" not in alice and "Showing user alice" in alice
    status, admin = _page(facility, ADMIN, "/")
    assert status == 200 and f"dash-alice-{tag}" in admin and f"dash-carol-{tag}" in admin
    assert _page(facility, "alice", f"/ui/jobs/{alice_job}")[0] == 200
    assert _page(facility, "alice", f"/ui/jobs/{carol_job}")[0] == 403
    assert _page(facility, ADMIN, f"/ui/jobs/{carol_job}")[0] == 200
    part: Any = _page(facility, "carol", "/?part=main")[1]
    assert f"dash-carol-{tag}" in part and f"dash-alice-{tag}" not in part


def test_the_sessions_panel_shows_a_user_their_own_sessions_and_an_admin_everyones(facility: Facility) -> None:
    tag = secrets.token_hex(3)
    for user in ("alice", "carol"):
        body = {
            "spec": {"name": f"dash-s-{user}", "command": ["true"]},
            "context": {"cwd": "/tmp", "session": f"sess-{user}-{tag}", "harness": "codex"},
        }
        answer = facility.probe(user, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
        assert answer[0] == 200, answer
    alice = _page(facility, "alice", "/")[1]
    assert f"sess-alice-{tag}" in alice and f"sess-carol-{tag}" not in alice
    admin = _page(facility, ADMIN, "/")[1]
    assert f"sess-alice-{tag}" in admin and f"sess-carol-{tag}" in admin
