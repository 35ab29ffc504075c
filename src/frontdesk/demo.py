"""`frontdesk demo`: a real gateway on the embedded backend and a small campaign, reports printed as jobs end."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from frontdesk.client import Client
from frontdesk.errors import GatewayUnavailable
from frontdesk.jobs.state import JobState

__all__ = ["run_demo", "start_gateway", "CAMPAIGN"]

PY = sys.executable

CAMPAIGN: list[dict[str, Any]] = [
    {
        "name": "prepare",
        "command": [
            PY,
            "-c",
            "import time; print('tokenising 10k samples'); time.sleep(1); print('wrote data/train.bin')",
        ],
        "resources": {"cpus": 1, "memory": "256M", "walltime": "1m"},
        "type": "agent",
        "trial": True,
    },
    {
        "name": "train",
        "depends_on": ["prepare"],
        "command": [
            PY,
            "-c",
            "import time\nfor e in range(3):\n    print(f'epoch {e} loss {1/(e+1):.3f}')\n"
            "    time.sleep(0.5)\nprint('saved checkpoint ckpt/last.pt')",
        ],
        "resources": {"cpus": 1, "memory": "512M", "walltime": "2m"},
    },
    {
        "name": "big-batch",
        "command": [
            PY,
            "-c",
            "import time; print('allocating activations'); x = bytearray(600 * 1024 * 1024); time.sleep(5)",
        ],
        "resources": {"cpus": 1, "memory": "200M", "walltime": "1m"},
    },
    {
        "name": "long-sweep",
        "command": [
            PY,
            "-c",
            "import time\nfor i in range(100):\n    print(f'step {i}', flush=True)\n    time.sleep(1)",
        ],
        "resources": {"cpus": 1, "memory": "128M", "walltime": "3s"},
    },
    {
        "name": "flaky-eval",
        "retry": {"count": 1, "on": [JobState.FAILED.value]},
        "command": [
            "/bin/sh",
            "-c",
            "if [ -e flaky.ok ]; then echo 'eval accuracy 0.91'; else touch flaky.ok; "
            "echo 'ConnectionResetError: dataset server went away' >&2; exit 3; fi",
        ],
        "resources": {"cpus": 1, "memory": "64M", "walltime": "1m"},
    },
]


def start_gateway(
    home: Path, extra_env: dict[str, str] | None = None, args: list[str] | None = None, timeout: float = 20.0
) -> tuple[subprocess.Popen[bytes], Client]:
    """Start `frontdesk serve` as a real process under `home`; return it and a client once it answers."""
    env = {**os.environ, "FRONTDESK_HOME": str(home), **(extra_env or {})}
    env.pop("FRONTDESK_SOCKET", None)
    sock = home / "run" / "gateway.sock"
    log = open(home / "gateway.log", "ab")
    proc = subprocess.Popen(
        [PY, "-m", "frontdesk.cli.main", "serve", *(args or [])],
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    client = Client(socket_path=sock)
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.health()
            return proc, client
        except GatewayUnavailable:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                tail = (home / "gateway.log").read_text(errors="replace")[-800:]
                raise GatewayUnavailable(f"the demo gateway did not start: {tail.strip().splitlines()[-1:]}") from None
            time.sleep(0.05)


def run_demo(keep: bool = False, as_json: bool = False, out: TextIO = sys.stdout) -> int:
    """Run the campaign; print each report as its job ends; return 0 when every job ended as expected."""
    home = Path(tempfile.mkdtemp(prefix="frontdesk-demo-"))
    workdir = home / "work"
    workdir.mkdir()
    proc, client = start_gateway(home)
    try:
        out.write(f"frontdesk demo: gateway pid {proc.pid}, state in {home}\n")
        ids = []
        for spec in CAMPAIGN:
            job = client.submit(spec={**spec, "workdir": str(workdir)}, context={"cwd": str(workdir), "source": "demo"})
            ids.append(job["id"])
            out.write(f"submitted job {job['id']} ({spec['name']})\n")
        out.flush()
        pending, seen = list(ids), {}
        while pending:
            res = client.wait(pending, "any", timeout=120)
            if not res["done"]:
                out.write("frontdesk demo: jobs did not end in time\n")
                return 1
            for rep in res["reports"]:
                seen[rep["job_id"]] = rep["state"]
                out.write((json.dumps(rep) if as_json else "\n" + rep["text"]) + "\n")
                out.flush()
            pending = [i for i in pending if i not in seen]
        expected = [
            JobState.COMPLETED,
            JobState.COMPLETED,
            JobState.OUT_OF_MEMORY,
            JobState.TIMEOUT,
            JobState.COMPLETED,
        ]
        got = [seen[i] for i in ids]
        out.write(f"\nfrontdesk demo: {len(ids)} jobs, end states {got}\n")
        return 0 if got == expected else 1
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not keep:
            shutil.rmtree(home, ignore_errors=True)
