"""A job of a root facility gateway does not possess the gateway's session keyring.

A session keyring survives fork, setuid and exec; systemd gives a service one of its own and a root shell has
root's. Every job of the embedded backend shared the gateway's: a key root (or another user's job) put there
was read by any user's job (the canary below: a `user` key only this test made, read back as `ROOTSECRET`).
Here the pytest process joins a session keyring of its own before the module's gateway starts, as systemd would;
the job gets a new, empty one (root's quota, not the user's 200 keys), which it can use as its own."""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Iterator

import pytest
from facility_helpers import Facility

_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
_ADD_KEY = {"x86_64": 248, "aarch64": 217}.get(os.uname().machine)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

JOB = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
n = int(sys.argv[1])
print("SESSION", libc.syscall(n, 0, ctypes.c_long(-3), 0))
key = libc.syscall(n, 10, ctypes.c_long(-3), b"user", b"fdprobe-keyring-canary", 0)
buf = ctypes.create_string_buffer(64)
print("READ", libc.syscall(n, 11, ctypes.c_long(key), buf, 64) if key > 0 else -1, buf.value.decode())
own = libc.syscall(int(sys.argv[2]), b"user", b"fdprobe-own", b"mine", 4, ctypes.c_long(-3))  # its own keyring works
buf = ctypes.create_string_buffer(64)
print("OWN", libc.syscall(n, 11, ctypes.c_long(own), buf, 64) if own > 0 else ctypes.get_errno(), buf.value.decode())
"""


@pytest.fixture(scope="module", autouse=True)
def own_session_keyring() -> Iterator[int]:
    """Runs before the module's facility gateway starts (autouse first): it inherits this keyring."""
    if _KEYCTL is None or _ADD_KEY is None:
        pytest.skip("keyctl numbers known for x86_64 and aarch64 only")
    ring = _libc.syscall(_KEYCTL, 1, b"fdprobe-gateway-session")  # KEYCTL_JOIN_SESSION_KEYRING
    if ring < 0:
        pytest.skip(f"no session keyrings here (errno {ctypes.get_errno()})")
    yield ring


def test_a_job_reads_no_key_of_the_gateways_session_keyring(facility: Facility, own_session_keyring: int) -> None:
    key = _libc.syscall(_ADD_KEY, b"user", b"fdprobe-keyring-canary", b"ROOTSECRET", 10, ctypes.c_long(-3))
    assert key > 0, ctypes.get_errno()
    try:
        spec = {"command": ["python3", "-c", JOB, str(_KEYCTL), str(_ADD_KEY)], "workdir": "/tmp"}
        body = {"spec": spec, "context": {"cwd": "/tmp", "env": {"PATH": "/usr/bin:/bin"}}}
        status, rec = facility.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
        assert status == 200, rec
        deadline = time.monotonic() + 60
        while not facility.root_client().request("GET", f"/v1/jobs/{rec['id']}").get("ended_at"):
            assert time.monotonic() < deadline
            time.sleep(0.3)
        status, logs = facility.probe("alice", [{"method": "GET", "path": f"/v1/jobs/{rec['id']}/logs"}])[0]
        assert status == 200, logs
        lines = logs["lines"]
        assert lines[0].startswith("SESSION ") and int(lines[0].split()[1]) > 0, lines
        assert int(lines[0].split()[1]) != own_session_keyring, lines  # before: the gateway's very keyring
        assert "ROOTSECRET" not in "\n".join(lines), lines
        assert lines[1] == "READ -1 ", lines
        assert lines[2] == "OWN 4 mine", lines  # the job's own session keyring is usable: a key put and read back
    finally:
        _libc.syscall(_KEYCTL, 3, ctypes.c_long(key))  # KEYCTL_REVOKE
