"""The storage agent's channel (signatures, clock window, replays) and the gateway's routing by prefix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from frontdesk.errors import ConfigError, Unauthenticated, UserError
from frontdesk.storage.channel import (
    WINDOW_S,
    Replay,
    load_key,
    open_answer,
    open_request,
    seal_answer,
    seal_request,
)
from frontdesk.storage.forward import Forwarder

KEY = b"k" * 32
Q: dict[str, object] = {"op": "grep", "argv": ["x", "caf\udce9"], "cwd": "/data", "user": "alice"}


def test_a_signed_request_opens_once_and_its_answer_is_bound_to_its_nonce() -> None:
    line, nonce = seal_request(KEY, Q)
    replay = Replay()
    body, got = open_request(KEY, line, replay)
    assert body == Q and got == nonce
    with pytest.raises(Unauthenticated, match="replayed"):
        open_request(KEY, line, replay)
    answer = seal_answer(KEY, nonce, {"items": []})
    assert open_answer(KEY, nonce, answer) == {"items": []}
    other_line, other_nonce = seal_request(KEY, Q)
    with pytest.raises(Unauthenticated, match="not signed"):
        open_answer(KEY, other_nonce, answer)  # an answer made for another question


@pytest.mark.parametrize("field", ["body", "ts", "nonce"])
def test_a_tampered_request_is_refused(field: str) -> None:
    line, _ = seal_request(KEY, Q)
    msg = json.loads(line)
    msg[field] = {**Q, "user": "bob"} if field == "body" else msg[field] + (1 if field == "ts" else "0")
    with pytest.raises(Unauthenticated, match="bad signature"):
        open_request(KEY, json.dumps(msg).encode(), Replay())


def test_a_foreign_key_an_old_request_and_garbage_are_refused() -> None:
    with pytest.raises(Unauthenticated, match="bad signature"):
        open_request(KEY, seal_request(b"o" * 32, Q)[0], Replay())
    old, _ = seal_request(KEY, Q, now=1000.0)
    with pytest.raises(Unauthenticated, match="off"):
        open_request(KEY, old, Replay(), now=1000.0 + WINDOW_S + 1)
    for junk in (b"", b"{", b"[]", b'{"ts": 1, "nonce": 2, "body": {}, "mac": "x"}'):
        with pytest.raises(Unauthenticated):
            open_request(KEY, junk, Replay())


def test_the_key_file_must_be_private_and_long(tmp_path: Path) -> None:
    key = tmp_path / "k"
    key.write_bytes(os.urandom(16).hex().encode())
    key.chmod(0o600)
    assert len(load_key(key)) == 32
    key.chmod(0o644)
    with pytest.raises(ConfigError, match="mode 0600"):
        load_key(key)
    key.write_bytes(b"short")
    key.chmod(0o600)
    with pytest.raises(ConfigError, match="shorter"):
        load_key(key)


def _forwarder(tmp_path: Path) -> Forwarder:
    key = tmp_path / "k"
    key.write_bytes(KEY)
    key.chmod(0o600)
    section = {
        "agent_key_file": str(key),
        "forward": [{"prefix": "/lustre", "agent": "mds1:7755"}, {"prefix": "/lustre/scratch/", "agent": "oss2:7755"}],
        "insecure_plaintext": True,  # routing only here; TLS is tests/integration/test_storage_tls.py
    }
    fwd = Forwarder.from_section(section, 120.0)
    assert fwd is not None
    return fwd


def test_a_question_goes_to_the_agent_of_the_longest_prefix_its_paths_lie_under(tmp_path: Path) -> None:
    fwd = _forwarder(tmp_path)
    agent = lambda op, argv, cwd: r.agent if (r := fwd.route_of(op, argv, cwd)) else None  # noqa: E731
    assert agent("grep", ["-n", "x", "/lustre/proj"], "/home/a") == "mds1:7755"
    assert agent("grep", ["-n", "x"], "/lustre/scratch/run") == "oss2:7755"  # no path: the cwd
    assert agent("find", ["../proj", "-name", "*.py"], "/lustre/scratch") == "mds1:7755"
    assert agent("find", ["/lustrebis"], "/") is None  # a prefix is a path, not a string prefix
    assert agent("du", ["-s", "/home/a"], "/") is None
    assert agent("grep", ["--bogus"], "/lustre") is None  # bad flags: answered (and refused) locally
    with pytest.raises(UserError, match="different storage"):
        fwd.route_of("wc", ["-l", "/lustre/a", "/home/b"], "/")


@pytest.mark.parametrize(
    "section",
    [
        {"forward": [{"prefix": "/x", "agent": "h:1"}]},  # no key file
        {"agent_key_file": "K", "forward": [{"prefix": "x", "agent": "h:1"}]},
        {"agent_key_file": "K", "forward": [{"prefix": "/x", "agent": "h"}]},
        {"agent_key_file": "K", "forward": [{"prefix": "/x", "agent": "h:99999"}]},
        {"agent_key_file": "K", "forward": {"prefix": "/x"}},
    ],
)
def test_a_bad_forward_table_is_a_config_error(tmp_path: Path, section: dict[str, object]) -> None:
    key = tmp_path / "k"
    key.write_bytes(KEY)
    key.chmod(0o600)
    if section.get("agent_key_file") == "K":
        section = {**section, "agent_key_file": str(key)}
    with pytest.raises(ConfigError):
        Forwarder.from_section(section, 1.0)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--key-file", "/nonexistent/k", "--listen", "127.0.0.1:7755"],
            "storage agent key /nonexistent/k: No such file or directory",
        ),
        (["--key-file", "K", "--listen", "nohost"], "--listen: expected HOST:PORT, got 'nohost'"),
    ],
)
def test_the_agent_refuses_bad_flags_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    import subprocess
    import sys

    key = tmp_path / "k"
    key.write_bytes(KEY)
    key.chmod(0o600)
    argv = [sys.executable, "-m", "frontdesk.storage.agent", *(str(key) if a == "K" else a for a in args)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"frontdesk-storage-agent: {says}\n"
