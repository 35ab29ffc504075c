"""TLS on the link from the gateway to a storage agent (docs/storage.md, "TLS").

A real agent process (`python -P -m frontdesk.storage.agent`) with a certificate from a CA made by the `openssl`
binary (test_gateway_tls's fixture), and the gateway's real Forwarder: the right CA gets an answer; another CA
is refused before a question is sent; a plain listener sees only a TLS handshake, never the signed question or
the user it names; a plain route to a non-loopback agent, and an agent listening off loopback without TLS, are
refused unless `insecure_plaintext` is set.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import test_gateway_tls  # noqa: E402
from test_gateway_tls import Pki  # noqa: E402

from frontdesk.errors import BackendError, ConfigError  # noqa: E402
from frontdesk.storage.forward import Forwarder  # noqa: E402

ca_pki = test_gateway_tls.pki  # the CA made by openssl, and the agent's certificate
QUESTION: dict[str, object] = {"op": "find", "argv": ["/usr"], "cwd": "/", "limit": 3, "cursor": None}


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    (tmp_path / "agent.key").write_bytes(os.urandom(32).hex().encode())
    (tmp_path / "agent.key").chmod(0o600)
    return tmp_path / "agent.key"


@pytest.fixture
def tls_agent(ca_pki: Pki, key_file: Path, tmp_path: Path) -> Iterator[str]:
    log = tmp_path / "agent.log"
    argv = [sys.executable, "-P", "-m", "frontdesk.storage.agent", "--listen", "127.0.0.1:0", "--key-file"]
    argv += [str(key_file), "--tls-cert", str(ca_pki.cert), "--tls-key", str(ca_pki.key)]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        while not (m := re.search(r"listening on (\S+)", log.read_text())):
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        yield m.group(1)
    finally:
        proc.terminate()
        proc.wait(30)


def _forwarder(agent: str, key_file: Path, **extra: object) -> Forwarder:
    section = {"agent_key_file": str(key_file), "forward": [{"prefix": "/usr", "agent": agent}], **extra}
    fwd = Forwarder.from_section(section, 20.0)
    assert fwd is not None
    return fwd


def _ask(fwd: Forwarder) -> dict[str, object]:
    return asyncio.run(fwd.ask(fwd.routes[0], "nobody", QUESTION))


def test_the_right_ca_gets_the_agents_answer_over_tls(ca_pki: Pki, key_file: Path, tls_agent: str) -> None:
    answer = _ask(_forwarder(tls_agent, key_file, agent_tls_ca=str(ca_pki.ca)))
    assert answer["node"] == os.uname().nodename
    assert "items" in answer


def test_another_ca_is_refused_and_a_plain_client_gets_nothing(ca_pki: Pki, key_file: Path, tls_agent: str) -> None:
    with pytest.raises(BackendError, match="certificate verify failed"):
        _ask(_forwarder(tls_agent, key_file, agent_tls_ca=str(ca_pki.other_ca)))
    with pytest.raises(BackendError, match="closed the connection"):  # plain text to the TLS port: no answer
        _ask(_forwarder(tls_agent, key_file))


def _record_one(srv: socket.socket, got: list[bytes]) -> None:
    srv.settimeout(30)  # never blocked for good: a closed listener does not wake accept(), and the suite would
    try:  # wait for this (non-daemon) thread at exit
        conn, _ = srv.accept()
    except OSError:
        return  # nobody connected: `got` stays empty, which the test reports
    with conn:
        conn.settimeout(10)
        got.append(conn.recv(65536))


def test_the_question_never_crosses_in_plain_text(ca_pki: Pki, key_file: Path) -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        got: list[bytes] = []
        t = threading.Thread(target=_record_one, args=(srv, got))
        t.start()
        with pytest.raises(BackendError):
            _ask(_forwarder(f"127.0.0.1:{srv.getsockname()[1]}", key_file, agent_tls_ca=str(ca_pki.ca)))
        t.join(30)
    assert got and got[0][:1] == b"\x16"  # a TLS handshake record
    assert b"nobody" not in got[0] and b"mac" not in got[0] and b"/usr" not in got[0]


def test_plain_text_off_loopback_is_refused_unless_allowed(key_file: Path) -> None:
    with pytest.raises(ConfigError, match="not loopback: set \\[storage\\] agent_tls_ca"):
        _forwarder("192.0.2.7:7755", key_file)
    assert _forwarder("192.0.2.7:7755", key_file, insecure_plaintext=True).tls is None
    with pytest.raises(ConfigError, match="insecure_plaintext must be true or false"):
        _forwarder("192.0.2.7:7755", key_file, insecure_plaintext="yes")
    argv = [sys.executable, "-P", "-m", "frontdesk.storage.agent", "--listen", "0.0.0.0:0", "--key-file"]
    done = subprocess.run([*argv, str(key_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "frontdesk-storage-agent: --listen 0.0.0.0: not loopback; give --tls-cert/--tls-key, or --insecure-plaintext"
    ]
