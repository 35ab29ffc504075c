"""What establishing the caller costs per request (issue 13): per-user socket, facility socket, token, MUNGE.

Run (as root, munged running): .venv/bin/python bench/identity_overhead.py [--requests 300]
Side by side in one run: a per-user gateway over its Unix socket (the baseline), a facility gateway over its
Unix socket (SO_PEERCRED + cached getgrouplist + the access check), the same gateway over TCP with a hashed
bearer token, and over TCP with a fresh MUNGE credential per request (`munge -n` in the client, `unmunge` in
the gateway). Each request is `GET /v1/jobs/1` (the authorization check included); prints p50/p99 in ms and
the ratio to the baseline. Two more per-user gateways take a bearer token on TCP: one in plain text (loopback),
one inside TLS (a certificate from a CA made with `openssl`), each request a new connection (a full handshake),
as a client makes it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.client import Client  # noqa: E402
from frontdesk.errors import GatewayUnavailable  # noqa: E402
from frontdesk.identity import hash_token  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(home: Path, env: dict[str, str], sock: Path) -> subprocess.Popen[bytes]:
    log = open(home / "gateway.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "frontdesk.cli.main", "serve"], env=env, stdout=log, stderr=log, start_new_session=True
    )
    log.close()
    deadline = time.monotonic() + 30
    while True:
        try:
            Client(socket_path=sock).health()
            return proc
        except GatewayUnavailable:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit((home / "gateway.log").read_text()[-2000:]) from None
            time.sleep(0.05)


def _measure(client: Client, n: int) -> list[float]:
    client.request("GET", "/v1/jobs/1")
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.request("GET", "/v1/jobs/1")
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _pki(d: Path) -> tuple[Path, Path, Path]:
    """(CA, certificate, key) for 127.0.0.1, made with the openssl binary."""
    d.mkdir()
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [
        ["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=bench-ca"],
        ["req", *ec, "-keyout", "gw.key", "-out", "gw.csr", "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", "gw.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "gw.pem",
         "-days", "1", "-extfile", "ext.cnf"],
    ]  # fmt: skip
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    for step in steps:
        subprocess.run(["openssl", *step], cwd=d, check=True, capture_output=True)
    (d / "gw.key").chmod(0o600)
    return d / "ca.pem", d / "gw.pem", d / "gw.key"


def _tcp_gateway(home: Path, env: dict[str, str], token: str, tls: tuple[Path, Path] | None) -> tuple[Any, str]:
    """A per-user gateway with a TCP listener taking `token` (inside TLS when given): (process, URL)."""
    home.mkdir()
    port = _port()
    extra = f'tls_cert = "{tls[0]}"\ntls_key = "{tls[1]}"\n' if tls else ""
    (home / "frontdesk.toml").write_text(f'[gateway]\nlisten = "127.0.0.1:{port}"\n{extra}')
    (home / "frontdesk.toml").chmod(0o600)
    proc = _start(home, {**env, "FRONTDESK_HOME": str(home), "FRONTDESK_TOKEN": token}, home / "run" / "gateway.sock")
    Client(socket_path=home / "run" / "gateway.sock").submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})
    return proc, f"{'https' if tls else 'http'}://127.0.0.1:{port}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    n = ap.parse_args().requests
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    root = Path(tempfile.mkdtemp(prefix="fdbench-", dir="/tmp"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        user_home, fac_home = root / "user", root / "fac"
        user_home.mkdir()
        fac_home.mkdir()
        port, token = _port(), "bench-token-value"
        (fac_home / "tokens").write_text(f"root {hash_token(token)}\n")
        (fac_home / "tokens").chmod(0o600)
        site = root / "site.toml"
        site.write_text(
            f'[gateway]\nmode = "facility"\nsocket = "{root / "fsock" / "gw.sock"}"\nlisten = "127.0.0.1:{port}"\n'
            f'tokens_file = "{fac_home / "tokens"}"\nmunge = true\n[access]\nadmins_group = "fdadmin"\n'
        )
        procs.append(
            _start(user_home, {**base_env, "FRONTDESK_HOME": str(user_home)}, user_home / "run" / "gateway.sock")
        )
        fac_env = {**base_env, "FRONTDESK_HOME": str(fac_home), "FRONTDESK_SITE_CONFIG": str(site)}
        procs.append(_start(fac_home, fac_env, root / "fsock" / "gw.sock"))
        for sock in (user_home / "run" / "gateway.sock", root / "fsock" / "gw.sock"):
            Client(socket_path=sock).submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})
        url = f"http://127.0.0.1:{port}"
        munge_client = Client(url=url)
        munge_client.munge = True
        ca, cert, key = _pki(root / "pki")
        os.environ["FRONTDESK_TLS_CA"] = str(ca)
        plain, plain_url = _tcp_gateway(root / "plain", base_env, token, None)
        tls, tls_url = _tcp_gateway(root / "tls", base_env, token, (cert, key))
        procs += [plain, tls]
        rows = [
            ("per-user, Unix socket", Client(socket_path=user_home / "run" / "gateway.sock")),
            ("facility, Unix socket (SO_PEERCRED)", Client(socket_path=root / "fsock" / "gw.sock")),
            ("facility, TCP + bearer token", Client(url=url, token=token)),
            ("facility, TCP + MUNGE", munge_client),
            ("per-user, TCP + bearer token", Client(url=plain_url, token=token)),
            ("per-user, TCP + TLS + bearer token", Client(url=tls_url, token=token)),
        ]
        base = None
        print(f"{'transport':40} {'p50 ms':>8} {'p99 ms':>8} {'x p50':>6}")
        for name, client in rows:
            times = sorted(_measure(client, n))
            p50, p99 = statistics.median(times), times[int(len(times) * 0.99) - 1]
            base = base or p50
            print(f"{name:40} {p50:8.2f} {p99:8.2f} {p50 / base:6.2f}")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=15)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
