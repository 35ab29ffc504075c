"""Hostile `squeue -o` field widths against a real gateway on the lab: the gateway renders squeue's text for the
socket shim and keeps it in files, so a width is outside input that sizes memory in the gateway.

Real squeue prints `%.100000i` as 100,000 characters, so the shim must still answer it (byte for byte); the
gateway hands such a line to the real squeue (409 on the text route) and never builds or keeps it. Before the
fix `%.99999999999i` answered 500 (MemoryError), a 5,000-digit width 500 (int() refuses it) and `%.20000i`
was rendered and re-rendered into a file every refresh.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slurm


@pytest.fixture
def lab_gateway(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> Any:
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["guard", "slurm"]\n\n'
        "[slurm]\nrefresh_seconds = 1.0\n"
    )
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    shims = tmp_path / "shims"
    assert gw.cli("shim", "install", str(shims)).returncode == 0
    env = {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
    held = subprocess.run(
        ["sbatch", "--parsable", "--hold", "-J", f"tp2-width-{time.time_ns()}", "-o", "/dev/null", "--wrap", "true"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert held.returncode == 0, held
    job = held.stdout.strip()
    yield gw, env, job
    subprocess.run(["scancel", job], capture_output=True)


def _text_route(gw: Any, *argv: str) -> httpx.Response:
    body = b"\0".join([b"uid=0", b"--", *(a.encode() for a in argv)])
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=60) as c:
        return c.post("http://frontdesk/v1/slurm/text/squeue", content=body)


@pytest.mark.parametrize("width", ["20000", "99999999999", "9" * 5000])
def test_a_huge_width_goes_to_the_real_squeue(lab_gateway: Any, width: str) -> None:
    gw, _, job = lab_gateway
    answer = _text_route(gw, "-h", "-j", job, "-o", f"%.{width}i")
    assert answer.status_code == 409, (answer.status_code, answer.text[:200])
    assert "width" in answer.text
    assert _text_route(gw, "-h", "-j", job, "-o", "%i").text == f"{job}\n"  # still serving
    kept = list((gw.socket.parent / "squeue-views").glob(f"*{width[:50]}*"))
    assert kept == []


def test_the_shim_prints_what_the_real_squeue_prints_for_a_wide_field(lab_gateway: Any) -> None:
    _, env, job = lab_gateway
    argv = ["squeue", "-h", "-j", job, "-o", "%.20000i|%j"]
    real = subprocess.run(argv, capture_output=True, text=True)
    shim = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert real.returncode == 0 and len(real.stdout) > 20000
    assert (shim.returncode, shim.stdout) == (real.returncode, real.stdout)
