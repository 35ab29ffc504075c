"""Core benchmark: submit throughput, and end-to-result latency for a waiting client versus a polling one.

Run: .venv/bin/python bench/core_bench.py [--jobs 1000] [--samples 20] [--poll-samples 8]
Everything is measured in this one run, side by side, against a real gateway process on the embedded
backend (machines here are noisy: compare the ratios, not the absolute numbers).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.client import Client  # noqa: E402
from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable
# The clock starts at the job's last print, so these figures include the job's own interpreter teardown
# (several ms on a busy machine); bench/hotpath.py times a job that exits right after printing.
END_JOB = [PY, "-c", "import time; time.sleep(0.3); print(repr(time.time()))"]


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    s = sorted(values)
    if not s:
        return float("nan")  # e.g. --poll-samples 0
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def submit_throughput(client: Client, n: int, threads: int, after: int | None = None) -> float:
    """Jobs accepted per second by the gateway (no-op jobs, `threads` concurrent submitters).

    With `after`, every job depends on that (running) job, so this measures acceptance alone; without it
    the same machine also launches and reaps every job while accepting the next ones.
    """
    per = n // threads
    spec: dict[str, object] = {"command": ["true"], "resources": {"memory": "16M"}}
    if after is not None:
        spec["depends_on"] = [after]
    start = time.perf_counter()

    def worker() -> None:
        c = Client(socket_path=client.socket_path)
        for _ in range(per):
            c.submit(spec=spec, context={"cwd": "/tmp"})

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return per * threads / (time.perf_counter() - start)


def drain(client: Client) -> None:
    """Wait until every job has ended (so latency runs start on an idle machine)."""
    while client.request("GET", "/v1/queue")["jobs"]:
        time.sleep(0.5)


def end_to_report_wait(client: Client) -> float:
    """Seconds from the job's last instruction to a long-polling client holding the report."""
    job = client.submit(spec={"command": END_JOB}, context={"cwd": "/tmp"})
    rep = client.wait([job["id"]], "all", 60)["reports"][0]
    got = time.time()
    return got - float(rep["stdout_tail"][-1])


def end_to_report_poll(client: Client, interval: float) -> float:
    """The same, for a client that polls `status` every `interval` seconds (as agents do)."""
    job = client.submit(spec={"command": END_JOB}, context={"cwd": "/tmp"})
    time.sleep(interval * (0.2 + 0.8 * (job["id"] % 7) / 7))  # agents' polls are not aligned with job ends
    while client.job(job["id"])["state"] not in ("COMPLETED", "FAILED"):
        time.sleep(interval)
    rep = client.report(job["id"])
    got = time.time()
    return got - float(rep["stdout_tail"][-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--poll-samples", type=int, default=8)
    ap.add_argument("--poll-interval", type=float, default=2.0)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-bench-", dir="/tmp"))
    proc, client = start_gateway(home, extra_env={"FRONTDESK_PLUGINS": "none"})
    try:
        tput = submit_throughput(client, args.jobs, args.threads)
        print(
            f"submit throughput, jobs running as they arrive: {tput:.0f} jobs/s "
            f"({args.jobs} no-op jobs, {args.threads} concurrent clients)"
        )
        drain(client)
        gate = client.submit(spec={"command": ["sleep", "600"]}, context={"cwd": "/tmp"})["id"]
        held = submit_throughput(client, args.jobs, args.threads, after=gate)
        print(f"submit throughput, acceptance only (jobs held by a dependency): {held:.0f} jobs/s")
        client.cancel(gate)
        drain(client)
        waits = [end_to_report_wait(client) for _ in range(args.samples)]
        polls = [end_to_report_poll(client, args.poll_interval) for _ in range(args.poll_samples)]
        w50, w99 = pct(waits, 50), pct(waits, 99)
        p50, p99 = pct(polls, 50), pct(polls, 99)
        print(
            f"end -> report, waiting client (gateway long-poll): p50 {w50 * 1000:.0f} ms, p99 {w99 * 1000:.0f} ms "
            f"({len(waits)} jobs)"
        )
        print(
            f"end -> report, client polling status every {args.poll_interval:.0f}s: p50 {p50 * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms ({len(polls)} jobs)"
        )
        print(
            f"ratio polling/waiting: p50 {p50 / w50:.1f}x, p99 {p99 / w99:.1f}x; "
            f"mean {statistics.mean(polls) / statistics.mean(waits):.1f}x"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
