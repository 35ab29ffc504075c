"""Arrays and batches (issue 21): a 1,000-task array accepted (wall time) and its one summary report (bytes),
beside the same 1,000 jobs sent one POST at a time and as one batch.

Run: .venv/bin/python bench/arrays.py [--tasks 1000] [--run-tasks 20]
     .venv/bin/python bench/arrays.py --probe [--tasks 10000] [--src OTHER/src]
`--probe`: while a big array is accepted, a second client asks /v1/health every 20 ms; prints the accept's wall
time and the slowest health answer (how long every other user waited). `--src` runs the gateway from another
checkout (a `git worktree` of the baseline commit): interleave the two, the host's load moves.
One real gateway on the embedded backend in a temp home. While accepting, every job waits on a held `sleep`
job, so the measurement is the submission path alone (no job runs meanwhile). Then the held job is cancelled:
the array's tasks end at once (their dependency failed), and its one report is measured (text bytes against
the 2 KB budget, JSON bytes). A second, small array runs for real (each task prints a metric line) to show a
report with metrics. Other engineers share this host's CPUs: compare the lines of ONE run with each other.
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
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.client import Client  # noqa: E402
from frontdesk.demo import start_gateway  # noqa: E402


def _start(home: Path, src: str | None = None) -> tuple[subprocess.Popen[bytes], Client]:
    """The demo's gateway starter under `home` (its code from `src` if given), none of the caller's gateway
    settings inherited; a client that waits as long as a 1,000-task array takes."""
    for key in ("FRONTDESK_SOCKET", "FRONTDESK_URL", "FRONTDESK_TOKEN", "FRONTDESK_CONFIG"):
        os.environ.pop(key, None)  # this benchmark process only
    extra = {"FRONTDESK_NO_AUTOSTART": "1", **({"PYTHONPATH": src} if src else {})}
    proc, _ = start_gateway(home, extra, timeout=30)
    return proc, Client(socket_path=home / "run" / "gateway.sock", timeout=600)


def _timed(fn: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()  # type: ignore[operator]
    return time.perf_counter() - t0, out


def _accept(client: Client, ctx: dict[str, object], n: int) -> tuple[int, int]:
    """The three ways in, each held behind its own gate job; prints acceptance times. Returns (gate, array id)."""
    gate = client.submit(spec={"command": ["sleep", "600"]}, context=ctx)["id"]
    other = client.submit(spec={"command": ["sleep", "600"]}, context=ctx)["id"]
    script = 'echo "epoch 3 loss=0.$(( (FRONTDESK_ARRAY_TASK_ID * 7919) % 1000 )) acc=0.9"'
    array_spec = {"name": "bench-array", "array": f"0-{n - 1}", "command": ["sh", "-c", script], "depends_on": [gate]}
    t_array, array = _timed(lambda: client.submit(spec=array_spec, context=ctx))
    one = {"command": ["true"], "depends_on": [other]}
    t_single, _ = _timed(lambda: [client.submit(spec=one, context=ctx) for _ in range(n)])
    batch = {"jobs": [{"spec": one} for _ in range(min(n, 1000))], "context": ctx}
    t_batch, _ = _timed(lambda: client.request("POST", "/v1/jobs/batch", batch))
    nb = len(batch["jobs"])
    print(f"{n}-task array accepted:        {t_array * 1000:8.1f} ms  ({n / t_array:8.0f} tasks/s)")
    print(f"{n} single POST /v1/jobs:       {t_single * 1000:8.1f} ms  ({n / t_single:8.0f} jobs/s)")
    print(f"{nb} jobs in one batch:         {t_batch * 1000:8.1f} ms  ({nb / t_batch:8.0f} jobs/s)")
    print(f"array vs single, same {n} jobs: {t_single / t_array:6.1f}x faster; batch: {t_single / t_batch:6.1f}x")
    client.cancel(other)  # the singles and the batch end DEPENDENCY_NEVER_SATISFIED: nothing runs
    return gate, int(array["id"])  # type: ignore[index]


def _probe(client: Client, probe: Client, ctx: dict[str, object], n: int) -> None:
    """A `n`-task array accepted while another client asks for health every 20 ms: the slowest answer."""
    gate = client.submit(spec={"command": ["sleep", "600"]}, context=ctx)["id"]
    spec = {"name": "bench-probe", "array": f"0-{n - 1}", "command": ["true"], "depends_on": [gate]}
    took: list[float] = []
    done = threading.Event()

    def accept() -> None:
        took.append(_timed(lambda: client.submit(spec=spec, context=ctx))[0])
        done.set()

    waits: list[float] = []
    after: list[float] = []  # the second after the reply: the tick examines the new tasks
    thread = threading.Thread(target=accept)
    thread.start()
    while not done.is_set():
        waits.append(_timed(probe.health)[0])
        time.sleep(0.02)
    thread.join()
    end = time.monotonic() + 1
    while time.monotonic() < end:
        after.append(_timed(probe.health)[0])
        time.sleep(0.02)
    load = Path("/proc/loadavg").read_text().split()[0]
    print(
        f"{n}-task array accepted in {took[0] * 1000:7.1f} ms; health asked {len(waits)}x meanwhile: slowest "
        f"{max(waits) * 1000:7.1f} ms, median {sorted(waits)[len(waits) // 2] * 1000:6.1f} ms; "
        f"in the second after: slowest {max(after) * 1000:6.1f} ms (load {load})"
    )
    client.cancel(gate)


def _report(rep: dict[str, object], label: str) -> None:
    text = str(rep["text"])
    print(f"{label}: text {len(text.encode())} bytes (budget 2048), JSON {len(json.dumps(rep))} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--run-tasks", type=int, default=20, help="a second array whose tasks really run (0: none)")
    ap.add_argument("--probe", action="store_true", help="health answers while a big array is accepted")
    ap.add_argument("--src", help="run the gateway from this src folder (a baseline worktree's)")
    args = ap.parse_args()
    n = args.tasks
    home = Path(tempfile.mkdtemp(prefix="fd-bench-arrays-", dir="/tmp"))
    proc, client = _start(home, args.src)
    ctx: dict[str, object] = {"cwd": str(home), "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}}
    try:
        if args.probe:
            return _probe(client, Client(socket_path=home / "run" / "gateway.sock", timeout=600), ctx, n)
        gate, array_id = _accept(client, ctx, n)
        t_end, res = _timed(lambda: (client.cancel(gate), client.wait([array_id], "all", 3600))[1])
        rep = res["reports"][0]  # type: ignore[index]
        print(f"its {n} tasks ended (dependency failed) and reported in {t_end:6.1f} s: {rep['array']['counts']}")
        _report(rep, f"the {n}-task array's one report")
        if args.run_tasks:
            script = 'echo "epoch 3 loss=0.$(( (FRONTDESK_ARRAY_TASK_ID * 7919) % 1000 )) acc=0.9"'
            spec = {"name": "bench-run", "array": f"0-{args.run_tasks - 1}", "command": ["sh", "-c", script]}
            t_run, res = _timed(lambda: client.wait([client.submit(spec=spec, context=ctx)["id"]], "all", 3600))
            rep = res["reports"][0]  # type: ignore[index]
            print(f"{args.run_tasks} tasks that really ran, in {t_run:6.1f} s: {rep['array']['counts']}")
            _report(rep, "its report")
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
