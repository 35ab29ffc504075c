"""Forwarding `frontdesk fs` to a storage agent: the operator runs where the data is, as the caller.

No second host here, so the agent runs in its own mount namespace (`unshare --mount`), where the forwarded
prefix is a bind mount of a directory that holds the data; on the gateway's side the same path is an empty
directory. An answer that finds the data therefore came from the agent. Real users (alice, bob), the real CLI
as them, a root facility gateway with `[[storage.forward]]`, and the agent started as a site would start it
(`python -P -m frontdesk.storage.agent --key-file ...`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
sys.path.insert(0, str(Path(__file__).parent))
from facility_helpers import facility_users  # noqa: E402
from test_fs_gateway import FsGateway, start_fs_gateway  # noqa: E402

from frontdesk.storage.channel import seal_request  # noqa: E402
from leftovers import stop_process  # noqa: E402

__all__ = ["facility_users"]


class Site:
    def __init__(self, d: Path, gw: FsGateway, agent: str, key: bytes) -> None:
        self.dir, self.gw, self.agent, self.key = d, gw, agent, key
        self.data, self.mnt = d / "data", d / "mnt"


def _start_agent(d: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    script = 'mount --bind "$1" "$2" && exec "$3" -P -m frontdesk.storage.agent --listen 127.0.0.1:0 --key-file "$4"'
    argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"]
    argv += [str(d / "data"), str(d / "mnt"), sys.executable, str(d / "agent.key")]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 30
    while not (m := re.search(r"listening on (\S+)", log.read_text())):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.05)
    return proc, m.group(1)


def _start_gateway(d: Path, agent: str) -> tuple[subprocess.Popen[bytes], FsGateway]:
    return start_fs_gateway(
        d,
        f'[storage]\nagent_key_file = "{d / "agent.key"}"\n\n'
        f'[[storage.forward]]\nprefix = "{d / "mnt"}"\nagent = "{agent}"\n',
    )


@pytest.fixture(scope="module")
def site(facility_users: dict[str, int]) -> Iterator[Site]:
    if not shutil.which("unshare") or subprocess.run(["unshare", "--mount", "true"]).returncode != 0:
        pytest.skip("needs unshare --mount (root) for the storage agent's own view of the tree")
    d = Path(tempfile.mkdtemp(prefix="fdsa-", dir="/tmp"))
    d.chmod(0o755)
    for sub in ("data", "mnt"):
        (d / sub).mkdir(mode=0o755)
    key = os.urandom(32).hex().encode()
    (d / "agent.key").write_bytes(key)
    (d / "agent.key").chmod(0o600)
    _user_tree(d / "data", "alice", {"train.log": "step 1\nCUDA out of memory\nstep 2\n"})
    _user_tree(d / "data", "bob", {"notes.txt": "CUDA secret\n"})
    agent, addr = _start_agent(d, d / "agent.log")
    gwproc, gw = _start_gateway(d, addr)
    try:
        yield Site(d, gw, addr, key)
    finally:
        for proc in (gwproc, agent):
            stop_process(proc, group=True)
        subprocess.run(["rm", "-rf", str(d)], check=False)


def _user_tree(root: Path, user: str, files: dict[str, str]) -> None:
    d = root / user
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    subprocess.run(["chown", "-R", f"{user}:", str(d)], check=True)
    d.chmod(0o700)


def test_a_question_under_the_prefix_runs_on_the_agent_and_sees_the_nodes_tree(site: Site) -> None:
    assert list(site.mnt.iterdir()) == []  # the gateway's (and this test's) view: nothing there
    tree = site.mnt / "alice"
    ans = site.gw.json("alice", "grep", "-n", "CUDA out of memory", str(site.mnt))
    assert ans["where"] == f"agent {site.agent}"
    assert ans["text"] == f"{tree}/train.log:2:CUDA out of memory\n"
    local = site.gw.cli("alice", "grep", "-rn", "CUDA out of memory", str(site.mnt), "--local", "--json")
    assert local.returncode == 1 and json.loads(local.stdout)["items"] == []  # the same path here is empty


def test_the_agent_reads_as_the_caller_and_the_gateway_charges_the_budget(site: Site) -> None:
    ans = site.gw.json("alice", "grep", "-l", "CUDA", str(site.mnt), session="sa")
    assert [i["path"] for i in ans["items"]] == [f"{site.mnt}/alice/train.log"]
    assert ans["errors"] == [{"path": f"{site.mnt}/bob", "message": "Permission denied"}]
    assert (
        site.gw.json("bob", "head", "-n", "1", str(site.mnt / "bob" / "notes.txt"))["items"][0]["text"] == "CUDA secret"
    )
    status, _, body = site.gw.raw("GET", "/v1/fs/budget")
    assert status == 200
    row = next(r for r in body["principals"] if r["user"] == "alice" and r["session"] == "sa")
    assert row["admitted"] >= 1 and row["spent"] >= sum(v for k, v in ans["stats"].items() if k != "cache_hits") > 0


def test_paths_on_two_storages_are_refused_in_one_line(site: Site) -> None:
    r = site.gw.cli("alice", "find", str(site.mnt), str(site.dir / "data"))
    assert r.returncode == 2
    assert r.stderr.startswith("frontdesk: fs find: these paths lie on different storage")


def _exchange(addr: str, line: bytes) -> dict[str, Any]:
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(line)
        out: dict[str, Any] = json.loads(s.makefile("rb").readline())
        return out


def test_the_agent_refuses_a_foreign_key_a_replay_and_questions_as_root(site: Site) -> None:
    question = {"op": "find", "argv": [str(site.mnt)], "cwd": "/", "limit": 10, "cursor": None, "user": "alice"}
    forged, _ = seal_request(os.urandom(32), question)
    assert _exchange(site.agent, forged)["error"] == "unauthenticated"
    good, _ = seal_request(site.key, question)
    assert "items" in _exchange(site.agent, good)["answer"]
    assert _exchange(site.agent, good)["message"] == "storage agent: replayed request"
    as_root, _ = seal_request(site.key, {**question, "user": "root"})
    assert _exchange(site.agent, as_root)["answer"]["error"] == "bad_input"
