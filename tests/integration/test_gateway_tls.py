"""TLS on the gateway's TCP listener: bearer tokens and MUNGE credentials never cross a network in plain text.

A real gateway with a certificate from a CA made here by the `openssl` binary (no new dependency): a client that
trusts that CA gets answers over https://; one that trusts another CA (or the system store) is refused before it
sends anything; a plain-HTTP client gets nothing from the TLS port; a client never sends a token (or a MUNGE
credential) in plain text to a non-loopback address (a plain listener records every byte it receives); the
gateway refuses to listen on a non-loopback address without TLS unless `insecure_plaintext = true`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from frontdesk.client import Client
from frontdesk.errors import ConfigError, GatewayUnavailable

TOKEN = "tls-test-token-0123456789abcdef"
PY = sys.executable


@dataclass
class Pki:
    ca: Path
    cert: Path
    key: Path
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _ca(d: Path, name: str) -> Path:
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj",
             f"/CN={name}", cwd=d)  # fmt: skip
    return d / f"{name}.pem"


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (the source address toward a TEST-NET host: no packet)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))
        except OSError:
            return None
        addr = str(s.getsockname()[0])
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl binary to make a test CA")
    d = tmp_path_factory.mktemp("pki")
    ca = _ca(d, "fdtest-ca")
    other = _ca(d, "fdtest-other-ca")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)
    names = "IP:127.0.0.1,DNS:localhost" + (f",IP:{a}" if (a := _outside_address()) else "")
    (d / "ext.cnf").write_text(
        f"subjectAltName={names}\nbasicConstraints=CA:FALSE\nauthorityKeyIdentifier=keyid,issuer\n"
        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    _openssl("x509", "-req", "-in", "server.csr", "-CA", ca.name, "-CAkey", "fdtest-ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)  # fmt: skip
    (d / "server.key").chmod(0o600)
    return Pki(ca, d / "server.pem", d / "server.key", other)


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tls_gateway(pki: Pki, gateway_factory: Any) -> tuple[Any, str]:
    port = _free_port()
    config = f'[gateway]\nlisten = "127.0.0.1:{port}"\ntls_cert = "{pki.cert}"\ntls_key = "{pki.key}"\n'
    return gateway_factory(config=config, env={"FRONTDESK_TOKEN": TOKEN}), f"https://127.0.0.1:{port}"


def _tcp_client(url: str, ca: Path | None, monkeypatch: pytest.MonkeyPatch) -> Client:
    if ca is None:
        monkeypatch.delenv("FRONTDESK_TLS_CA", raising=False)
    else:
        monkeypatch.setenv("FRONTDESK_TLS_CA", str(ca))
    monkeypatch.setenv("FRONTDESK_SITE_CONFIG", "/nonexistent/frontdesk.toml")
    return Client(url=url, token=TOKEN, timeout=10, autostart=False)


def test_a_client_that_trusts_the_ca_is_answered_over_tls(
    tls_gateway: tuple[Any, str], pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw, url = tls_gateway
    client = _tcp_client(url, pki.ca, monkeypatch)
    assert client.health()["ok"] is True
    job = client.submit(spec={"command": ["true"], "name": "over-tls"})
    assert gw.client.job(job["id"])["name"] == "over-tls"  # the same gateway, seen on its Unix socket
    env = {**gw.env, "FRONTDESK_URL": url, "FRONTDESK_TOKEN": TOKEN, "FRONTDESK_TLS_CA": str(pki.ca)}
    env.pop("FRONTDESK_SOCKET", None)
    cli = gw.cli("status", str(job["id"]), "--json", env=env)  # a fresh CLI process, over TCP + TLS
    assert cli.returncode == 0, cli.stderr
    assert '"over-tls"' in cli.stdout


@pytest.mark.parametrize("trust", ["other-ca", "system-store"])
def test_a_client_that_does_not_trust_the_certificate_sends_nothing(
    tls_gateway: tuple[Any, str], pki: Pki, monkeypatch: pytest.MonkeyPatch, trust: str
) -> None:
    gw, url = tls_gateway
    before = len(gw.client.jobs())
    client = _tcp_client(url, pki.other_ca if trust == "other-ca" else None, monkeypatch)
    with pytest.raises(GatewayUnavailable) as err:
        client.submit(spec={"command": ["true"], "name": "wrong-ca"})
    assert "failed TLS verification" in err.value.message and "\n" not in err.value.message
    assert len(gw.client.jobs()) == before


def test_a_plain_client_gets_nothing_from_the_tls_port(
    tls_gateway: tuple[Any, str], pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw, url = tls_gateway
    before = len(gw.client.jobs())
    client = _tcp_client(url.replace("https://", "http://"), pki.ca, monkeypatch)
    with pytest.raises(GatewayUnavailable):
        client.submit(spec={"command": ["true"], "name": "plain-to-tls"})
    assert len(gw.client.jobs()) == before
    assert client.__class__(socket_path=gw.socket).health()["ok"] is True  # the gateway is still fine


class _Recorder:
    """A plain TCP listener that records every byte each connection sends (and answers nothing)."""

    def __init__(self, host: str) -> None:
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.received = b""
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.settimeout(2)
            try:
                while data := conn.recv(65536):
                    self.received += data
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def outside() -> str:
    addr = _outside_address()
    if addr is None:
        pytest.skip("this machine has no non-loopback IPv4 address to listen on")
    return addr


@pytest.mark.parametrize("auth", ["token", "munge"])
def test_no_credential_goes_in_plain_text_off_loopback(
    outside: str, monkeypatch: pytest.MonkeyPatch, auth: str
) -> None:
    rec = _Recorder(outside)
    try:
        monkeypatch.setenv("FRONTDESK_SITE_CONFIG", "/nonexistent/frontdesk.toml")
        if auth == "munge":
            monkeypatch.setenv("FRONTDESK_AUTH", "munge")
        client = Client(url=f"http://{outside}:{rec.port}", token=TOKEN if auth == "token" else None, timeout=3)
        with pytest.raises(ConfigError) as err:
            client.health()
        assert "FRONTDESK_URL" in err.value.message and "https://" in err.value.message
        env = {**os.environ, "FRONTDESK_URL": f"http://{outside}:{rec.port}", "FRONTDESK_TOKEN": TOKEN}
        env["FRONTDESK_SITE_CONFIG"] = "/nonexistent/frontdesk.toml"
        code = "from frontdesk.shims.common import http_get; http_get('/v1/slurm/squeue')"
        shim = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert shim.returncode != 0 and "ConfigError" in shim.stderr and "in plain text" in shim.stderr
    finally:
        rec.close()
    assert rec.connections == 0 and rec.received == b""  # refused before connecting: not even a SYN's worth


def test_over_https_a_plain_listener_sees_only_a_tls_handshake(
    outside: str, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Recorder(outside)
    try:
        client = _tcp_client(f"https://{outside}:{rec.port}", pki.ca, monkeypatch)
        client.timeout = 1.5
        with pytest.raises(GatewayUnavailable):
            client.health()  # the recorder never completes the handshake: no fall back to plain text
    finally:
        rec.close()
    assert rec.connections == 1 and rec.received[:1] == b"\x16"  # a TLS record: the ClientHello
    assert TOKEN.encode() not in rec.received and b"Bearer" not in rec.received and b"HTTP/1" not in rec.received


def _serve_once(home: Path, config: str, *args: str) -> subprocess.CompletedProcess[str]:
    (home / "frontdesk.toml").write_text(config)
    (home / "frontdesk.toml").chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(FRONTDESK_HOME=str(home), FRONTDESK_TOKEN=TOKEN, FRONTDESK_NO_AUTOSTART="1")
    argv = [PY, "-m", "frontdesk.cli.main", "serve", *args]
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired as exc:  # it started: the test stops it by its timeout, says what it printed
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return subprocess.CompletedProcess(argv, -9, out, err)


@pytest.mark.parametrize(
    "gateway, words",
    [
        ("", "insecure_plaintext"),
        ('tls_cert = "{cert}"', "tls_cert and tls_key go together"),
        ('tls_cert = "{cert}"\ntls_key = "{missing}"', "no such file"),
        ('tls_cert = "{ca}"\ntls_key = "{key}"', "not a PEM certificate and its key"),
        ('tls_cert = "{cert}"\ntls_key = "{open_key}"', "chmod 600"),
        ("insecure_plaintext = 1", "insecure_plaintext: expected true or false"),
    ],
    ids=["no-tls", "cert-only", "missing-key", "wrong-pair", "key-readable", "not-a-bool"],
)
def test_the_gateway_refuses_an_unsafe_tcp_listener_in_one_line(
    pki: Pki, tmp_path: Path, outside: str, gateway: str, words: str
) -> None:
    open_key = tmp_path / "open.key"
    open_key.write_bytes(pki.key.read_bytes())
    open_key.chmod(0o644)
    filled = gateway.format(cert=pki.cert, ca=pki.ca, key=pki.key, missing=tmp_path / "nope.key", open_key=open_key)
    config = f'[gateway]\nlisten = "{outside}:{_free_port(outside)}"\n{filled}\n'
    home = tmp_path / "home"
    home.mkdir()
    done = _serve_once(home, config)
    assert done.returncode not in (0, -9), done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert not (home / "run" / "gateway.sock").exists()  # nothing bound


def test_insecure_plaintext_starts_with_a_warning(gateway_factory: Any, outside: str) -> None:
    port = _free_port(outside)
    config = f'[gateway]\nlisten = "{outside}:{port}"\ninsecure_plaintext = true\n'
    gw = gateway_factory(config=config, env={"FRONTDESK_TOKEN": TOKEN})
    assert "WITHOUT TLS (insecure_plaintext = true)" in gw.log()
    with socket.create_connection((outside, port), timeout=5) as s:  # plain HTTP is served, as the site asked
        s.sendall(b"GET /v1/health HTTP/1.0\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 200")


def test_munge_over_tls_and_the_facility_subscription(
    pki: Pki, gateway_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MUNGE-signed request and a user's gateway's subscription to the facility (asyncio) go over TLS."""
    import asyncio
    import contextlib
    import tempfile

    from frontdesk.facility_subscribe import Subscription

    if shutil.which("munge") is None:
        pytest.skip("needs munge")
    home = Path(tempfile.mkdtemp(prefix="fdtls-", dir="/tmp"))
    port = _free_port()
    config = (
        f'[gateway]\nmode = "facility"\nsocket = "{home / "run" / "gateway.sock"}"\nlisten = "127.0.0.1:{port}"\n'
        f'tls_cert = "{pki.cert}"\ntls_key = "{pki.key}"\nmunge = true\nplugins = []\n'
    )
    gw = gateway_factory(config=config, env={"FRONTDESK_TOKEN": TOKEN}, home=home)
    url = f"https://127.0.0.1:{port}"
    monkeypatch.setenv("FRONTDESK_TLS_CA", str(pki.ca))
    monkeypatch.setenv("FRONTDESK_SITE_CONFIG", "/nonexistent/frontdesk.toml")
    monkeypatch.setenv("FRONTDESK_AUTH", "munge")
    monkeypatch.delenv("FRONTDESK_TOKEN", raising=False)
    assert Client(url=url, timeout=10, autostart=False).request("GET", "/v1/jobs") == []  # MUNGE, inside TLS

    pushed: list[list[str]] = []
    sub = Subscription(home / "absent.sock", home / "sub", lambda ids: pushed.append(list(ids)), url=url)
    (home / "sub").mkdir()

    async def go() -> None:
        task = asyncio.get_running_loop().create_task(sub._once())
        for _ in range(200):  # until the stream is open (its head event set the cursor)
            if sub.cursor is not None:
                break
            await asyncio.sleep(0.05)
        info = {"SLURM_JOB_UID": str(os.geteuid()), "SLURM_JOB_EXIT_CODE2": "0:0"}
        await asyncio.to_thread(
            gw.client.request, "POST", "/v1/notify", {"backend": "slurm", "ids": ["4242"], "info": info}
        )
        for _ in range(200):
            if pushed:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert pushed == [["4242"]]


def test_handshakes_count_against_their_host_before_they_are_made(
    tls_gateway: tuple[Any, str], pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host holding TCP connections without ever shaking hands is capped like one holding open connections
    (MAX_PER_PEER): over the cap a connection is closed at once, not after the handshake timeout; another host
    is still answered. Before, asyncio shook hands first and the cap counted only finished handshakes."""
    from frontdesk.api.connection import MAX_PER_PEER
    from frontdesk.tls import HANDSHAKE_S

    gw, url = tls_gateway
    port = int(url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for _ in range(MAX_PER_PEER + 8):
            s = socket.socket()
            s.bind(("127.0.0.2", 0))  # another loopback host than the client's 127.0.0.1
            s.connect(("127.0.0.1", port))
            held.append(s)
        for s in held[-4:]:
            s.settimeout(HANDSHAKE_S / 2)  # closed at once by the gate; a handshake left to time out takes 10 s
            try:
                assert s.recv(1) == b""
            except ConnectionResetError:
                pass
        client = _tcp_client(url, pki.ca, monkeypatch)
        assert client.health()["ok"] is True  # 127.0.0.1 is another host: answered meanwhile
    finally:
        for s in held:
            s.close()
