"""`frontdesk fs` through a root facility gateway: the operator reads as the caller, never as the gateway;
the listing cache never answers stale; an agent that spends its metadata budget gets 429/exit 75 with a
retry-after while another user is served.

Real Unix users (alice, bob: the facility suite's), the real CLI run as them with the system Python, a root
gateway with only the storage plug-in and a small budget ([storage] rate = 1, burst = 400).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).with_name("facility")))
from facility_helpers import SYSTEM_PY, facility_users, run_as  # noqa: E402

from frontdesk.client import Client  # noqa: E402
from frontdesk.errors import GatewayUnavailable  # noqa: E402
from leftovers import stop_process  # noqa: E402

__all__ = ["facility_users"]


class FsGateway:
    def __init__(self, d: Path) -> None:
        self.dir, self.socket, self.site = d, d / "run" / "gateway.sock", d / "frontdesk.toml"

    def cli(self, user: str, *args: str, session: str = "s1") -> subprocess.CompletedProcess[str]:
        env = {"FRONTDESK_SITE_CONFIG": str(self.site), "FRONTDESK_SESSION": session}
        return run_as(user, [SYSTEM_PY, "-m", "frontdesk.cli.main", "fs", *args], env=env)

    def json(self, user: str, *args: str, session: str = "s1") -> dict[str, Any]:
        r = self.cli(user, *args, "--json", session=session)
        out: dict[str, Any] = json.loads(r.stdout)
        # as the tool: 1 (nothing found, or find/du/head's path failed), 2 (grep's path failed, e.g. denied)
        assert r.returncode in (0, 1) or (r.returncode == 2 and out.get("errors")), r.stderr
        return out

    def raw(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, str], Any]:
        """An HTTP call as root over the Unix socket, with the answer's headers."""
        conn = http.client.HTTPConnection("localhost", timeout=60)
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(self.socket))
        conn.sock = sock
        conn.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read() or b"null")
        conn.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def start_fs_gateway(d: Path, storage: str) -> tuple[subprocess.Popen[bytes], FsGateway]:
    """A facility gateway with the storage plug-in in `d` (`storage`: the site config's [storage] part), answering."""
    gw = FsGateway(d)
    gw.site.write_text(f'[gateway]\nmode = "facility"\nsocket = "{gw.socket}"\nplugins = ["storage"]\n\n{storage}')
    gw.site.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(FRONTDESK_HOME=str(d / "home"), FRONTDESK_SITE_CONFIG=str(gw.site))
    with open(d / "gateway.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "frontdesk.cli.main", "serve"], env=env, stdout=log, stderr=log,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            Client(socket_path=gw.socket, timeout=10).health()
            return proc, gw
        except GatewayUnavailable:
            assert proc.poll() is None and time.monotonic() < deadline, (d / "gateway.log").read_text()[-3000:]
            time.sleep(0.05)


@pytest.fixture(scope="module")
def fsgw(facility_users: dict[str, int]) -> Iterator[FsGateway]:
    d = Path(tempfile.mkdtemp(prefix="fdfs-", dir="/tmp"))
    d.chmod(0o755)
    proc, gw = start_fs_gateway(d, "[storage]\nrate = 1\nburst = 400\n")
    yield gw
    stop_process(proc)
    subprocess.run(["rm", "-rf", str(d)], check=False)


def _user_dir(gw: FsGateway, user: str, files: dict[str, str], name: str = "") -> Path:
    d = gw.dir / f"{user}{name}"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    subprocess.run(["chown", "-R", f"{user}:", str(d)], check=True)
    d.chmod(0o700)
    return d


def test_the_operator_reads_as_the_caller_not_as_the_root_gateway(fsgw: FsGateway) -> None:
    bob = _user_dir(fsgw, "bob", {"notes.txt": "the password is swordfish\n"})
    alice = _user_dir(fsgw, "alice", {"a.txt": "swordfish recipe\n"})
    theirs = fsgw.json("alice", "grep", "-l", "swordfish", str(bob))
    assert theirs["where"] == "gateway"
    assert theirs["items"] == []
    assert theirs["errors"] == [{"path": str(bob), "message": "Permission denied"}]
    mine = fsgw.json("alice", "grep", "-n", "swordfish", str(alice))
    assert mine["text"] == f"{alice}/a.txt:1:swordfish recipe\n"
    assert (
        fsgw.json("bob", "head", "-n", "1", str(bob / "notes.txt"))["items"][0]["text"] == "the password is swordfish"
    )


def test_a_change_is_seen_by_the_next_answer_and_an_unchanged_tree_is_served_from_the_cache(fsgw: FsGateway) -> None:
    d = _user_dir(fsgw, "alice", {"one.txt": "alpha\n"}, "-cache")
    first = fsgw.json("alice", "find", str(d), "-type", "f")
    again = fsgw.json("alice", "find", str(d), "-type", "f")
    assert again["items"] == first["items"]
    assert again["stats"]["readdir"] == 0 and again["stats"]["cache_hits"] >= 1
    (d / "two.txt").write_text("alpha beta\n")  # a new name: the directory's mtime changes
    after = fsgw.json("alice", "find", str(d), "-type", "f")
    assert [i["path"] for i in after["items"]] == [f"{d}/one.txt", f"{d}/two.txt"]
    with open(d / "one.txt", "a") as fh:  # content only: the listing stays, the read is fresh
        fh.write("alpha again\n")
    grep = fsgw.json("alice", "grep", "-c", "alpha", str(d))
    assert [(i["path"], i["count"]) for i in grep["items"]] == [(f"{d}/one.txt", 2), (f"{d}/two.txt", 1)]


def test_an_agent_that_spends_its_budget_waits_and_others_are_served(fsgw: FsGateway) -> None:
    d = _user_dir(fsgw, "alice", {f"f{i:03}.txt": "x\n" for i in range(450)}, "-many")
    first = fsgw.cli("alice", "wc", "-l", str(d), session="noisy")
    assert first.returncode == 0, first.stderr
    refused = fsgw.cli("alice", "wc", "-l", str(d), session="noisy")
    assert refused.returncode == 75
    assert refused.stderr.startswith("frontdesk: metadata budget of alice (session noisy) is empty; retry after")
    assert len(refused.stderr.strip().splitlines()) == 1
    quiet = fsgw.cli("alice", "find", str(d), "-maxdepth", "0", session="quiet")
    assert quiet.returncode == 0 and quiet.stdout == f"{d}\n"
    assert fsgw.cli("bob", "find", "/tmp", "-maxdepth", "0").returncode == 0
    status, headers, body = fsgw.raw("POST", "/v1/fs/wc", {"argv": [str(d)], "cwd": "/", "session": "root-noisy"})
    assert status == 200
    status, headers, body = fsgw.raw("POST", "/v1/fs/wc", {"argv": [str(d)], "cwd": "/", "session": "root-noisy"})
    assert status == 429 and int(headers["retry-after"]) >= 1 and body["error"] == "rate_limited"
    _, _, counters = fsgw.raw("GET", "/v1/fs/budget")
    noisy = next(p for p in counters["principals"] if p["user"] == "alice" and p["session"] == "noisy")
    assert noisy["refused"] == 1 and noisy["admitted"] == 1 and noisy["spent"] > 400


def test_bad_questions_get_one_line_and_exit_2(fsgw: FsGateway) -> None:
    r = fsgw.cli("alice", "find", "/tmp", "-size", "lots")
    assert r.returncode == 2 and r.stderr == "frontdesk: -size: expected [+-]N[ckMG], got 'lots'\n"
    status, _, body = fsgw.raw("POST", "/v1/fs/rm", {"argv": []})
    assert status == 400 and "no operator 'rm'" in body["message"]


def test_without_a_gateway_the_cli_answers_locally(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("hello\n")
    env = {**os.environ, "FRONTDESK_SOCKET": str(tmp_path / "none.sock"), "FRONTDESK_NO_AUTOSTART": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "fs", "grep", "-n", "hello", ".", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    answer = json.loads(r.stdout)
    assert r.returncode == 0 and answer["where"] == "local" and answer["text"] == "./x.txt:1:hello\n"
