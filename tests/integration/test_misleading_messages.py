"""A bad path or URL in the environment or the config is named for what it is, in one line with a non-zero exit
(real CLI and `serve` processes): /dev/zero as FRONTDESK_CONFIG is no regular file (not "missing"), an unclosed
IPv6 bracket in FRONTDESK_URL is a malformed URL (not "refused the connection"), a FIFO as tls_cert is no
regular file (not "no such file")."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

PY = sys.executable


def _run(home: Path, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(FRONTDESK_HOME=str(home), FRONTDESK_NO_AUTOSTART="1", **extra)
    try:
        return subprocess.run(
            [PY, "-m", "frontdesk.cli.main", *argv], env=env, capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired as exc:  # serve started after all: say what it printed
        return subprocess.CompletedProcess(argv, -9, "", str(exc.stderr or ""))


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode not in (0, -9) and len(lines) == 1, (done.returncode, done.stderr)
    return lines[0]


def test_a_device_as_the_config_file_is_no_regular_file(tmp_path: Path) -> None:
    line = _one_line(_run(tmp_path, "serve", FRONTDESK_CONFIG="/dev/zero"))
    assert "not a regular file" in line and "missing" not in line, line


def test_a_malformed_url_is_called_malformed(tmp_path: Path) -> None:
    line = _one_line(_run(tmp_path, "jobs", FRONTDESK_URL="http://[::1"))
    assert "is not http[s]://HOST[:PORT]" in line and "refused" not in line, line


def test_a_fifo_as_tls_cert_is_no_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "cert.pem"
    os.mkfifo(fifo)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "home"
    home.mkdir()
    config = f'[gateway]\nlisten = "127.0.0.1:{port}"\ntls_cert = "{fifo}"\ntls_key = "{fifo}"\n'
    (home / "frontdesk.toml").write_text(config)
    (home / "frontdesk.toml").chmod(0o600)
    line = _one_line(_run(home, "serve", FRONTDESK_TOKEN="t" * 40))
    assert "tls_cert" in line and "not a regular file (a FIFO)" in line and "no such file" not in line, line
