"""Arrays and batches (issue 21): a 1,000-task array accepted (wall time) and its one summary report (bytes),
beside the same 1,000 jobs sent one POST at a time and as one batch.

Run: .venv/bin/python bench/arrays.py [--tasks 1000] [--no-run]
One real gateway on the embedded backend in a temp home. While accepting, every job waits on a held `sleep`
job, so the measurement is the submission path alone (no job runs meanwhile). Then the held job ends and the
array's tasks run for real (each prints a metric line), and the array's one report is measured: its text
bytes (the 2 KB budget) and its JSON bytes. Other engineers share this host's CPUs: compare the lines of ONE
run with each other, not runs with each other.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.client import Client  # noqa: E402
from frontdesk.errors import GatewayUnavailable  # noqa: E402


def _start(home: Path) -> tuple[subprocess.Popen[bytes], Client]:
    env = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    for key in ("FRONTDESK_SOCKET", "FRONTDESK_URL", "FRONTDESK_TOKEN", "FRONTDESK_CONFIG"):
        env.pop(key, None)
    log = open(home / "gateway.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "frontdesk.cli.main", "serve"], env=env, stdout=log, stderr=log, start_new_session=True
    )
    log.close()
    client = Client(socket_path=home / "run" / "gateway.sock", timeout=600)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.health()
            return proc, client
        except GatewayUnavailable:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit((home / "gateway.log").read_text()[-2000:]) from None
            time.sleep(0.05)


def _timed(fn: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()  # type: ignore[operator]
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--no-run", action="store_true", help="measure acceptance only (the tasks never run)")
    args = ap.parse_args()
    n = args.tasks
    home = Path(tempfile.mkdtemp(prefix="fd-bench-", dir="/tmp"))
    proc, client = _start(home)
    ctx = {"cwd": str(home), "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}}
    try:
        gate = client.submit(spec={"command": ["sleep", "600"]}, context=ctx)["id"]
        held = {"depends_on": [gate], "fail_action": "continue"}
        script = 'echo "epoch 3 loss=0.$(( (FRONTDESK_ARRAY_TASK_ID * 7919) % 1000 )) acc=0.9"'
        array_spec = {"name": "bench-array", "array": f"0-{n - 1}", "command": ["sh", "-c", script], **held}
        t_array, array = _timed(lambda: client.submit(spec=array_spec, context=ctx))
        one = {"command": ["true"], **held}
        t_single, _ = _timed(lambda: [client.submit(spec=one, context=ctx) for _ in range(n)])
        batch = {"jobs": [{"spec": one} for _ in range(min(n, 1000))], "context": ctx}
        t_batch, _ = _timed(lambda: client.request("POST", "/v1/jobs/batch", batch))
        print(f"{n}-task array accepted:        {t_array * 1000:8.1f} ms  ({n / t_array:8.0f} tasks/s)")
        print(f"{n} single POST /v1/jobs:       {t_single * 1000:8.1f} ms  ({n / t_single:8.0f} jobs/s)")
        nb = len(batch["jobs"])
        print(f"{nb} jobs in one batch:         {t_batch * 1000:8.1f} ms  ({nb / t_batch:8.0f} jobs/s)")
        print(f"array vs single, same {n} jobs: {t_single / t_array:6.1f}x faster; batch: {t_single / t_batch:6.1f}x")
        if args.no_run:
            return
        held_ids = [j["id"] for j in client.jobs(state=["PENDING"], limit=100000) if j.get("array") is None]
        for job_id in held_ids:  # the singles and the batch: not needed any more
            if job_id != gate:
                client.cancel(job_id)
        client.request("POST", f"/v1/jobs/{gate}/cancel", {})  # fail_action continue: the array runs now
        t_run, res = _timed(lambda: client.wait([array["id"]], "all", 3600))  # type: ignore[index]
        rep = res["reports"][0]  # type: ignore[index]
        print(f"{n} tasks ran in:               {t_run:8.1f} s   ({rep['state']}, {rep['array']['counts']})")
        print(
            f"its one report: text {len(rep['text'].encode())} bytes (budget 2048), JSON {len(json.dumps(rep))} bytes"
        )
        print("--- the report ---")
        print(rep["text"])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
