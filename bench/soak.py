"""Soak: mixed load against a real gateway for a while (default 30 min), with kills, then a full count.

Run: .venv/bin/python bench/soak.py [--duration 1800] [--waiters 5000] [--rate 10] [--kill-every 120]

Load, all at once, from one asyncio loop over the Unix socket:
- `--waiters` long-polls parked the whole run on jobs held behind a gate (`--per-job` per job), re-parked after
  restarts (held jobs are dependents: each one costs the gateway a re-check whenever any job ends);
- a stream of keyed submissions at `--rate` per second, each with one waiter of its own (wake latency);
- some of them cancelled, some with their shepherd SIGKILLed mid-run (fenced, retried once);
- the gateway SIGKILLed every `--kill-every` seconds and restarted; clients retry with the same key.
At the end the gate opens, everything drains, and the journal and the jobs' own run records are checked:
lost (accepted, no report), duplicated (a key with two ids, an attempt run twice, two reports or two terminal
events for one job), wrong state (not the end its fate calls for) — all must be 0. Also printed: gateway RSS
over time, submit and wake latency percentiles (wakes across a restart are counted apart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from history import fill_with  # noqa: E402  (bench/history.py)

from frontdesk.demo import start_gateway  # noqa: E402

RECONNECT_S = 15.0
"""After a restart every parked waiter reconnects at once: latencies in this window are reported apart."""
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}


class Down(Exception):
    """The gateway is not answering (killed, restarting)."""


async def http(sock: Path, method: str, path: str, body: Any = None, timeout: float = 60) -> tuple[int, Any]:
    """One request over the Unix socket; (status, decoded JSON)."""
    data = b"" if body is None else json.dumps(body).encode()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(sock), limit=2**24), 10)
    except (OSError, TimeoutError) as exc:
        raise Down(str(exc)) from None
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(data)}\r\n"
        writer.write((head + "Content-Type: application/json\r\n\r\n").encode() + data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
    except (OSError, TimeoutError) as exc:
        raise Down(str(exc)) from None
    finally:
        writer.close()
    header, _, rest = raw.partition(b"\r\n\r\n")
    if not header:
        raise Down("empty answer")
    status = int(header.split(b" ", 2)[1])
    length = next(
        (int(h.split(b":", 1)[1]) for h in header.lower().split(b"\r\n") if h.startswith(b"content-length:")), -1
    )
    if length != len(rest):
        raise Down(f"cut answer (HTTP {status}, {len(rest)} of {length} bytes)")  # killed mid-answer
    try:
        return status, json.loads(rest) if rest else None
    except ValueError:
        raise Down(f"cut answer (HTTP {status})") from None


@dataclass
class Job:
    key: str
    fate: str  # plain | cancel | shepherd_kill | held
    id: int | None = None
    submit_s: float | None = None
    submitted_at: float | None = None
    woke_at: float | None = None
    report: dict[str, Any] | None = None
    ended_at: float | None = None


@dataclass
class Soak:
    home: Path
    args: argparse.Namespace
    proc: Any = None
    jobs: list[Job] = field(default_factory=list)
    restarts: list[tuple[float, float]] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)
    keys_seen: dict[str, set[int]] = field(default_factory=dict)
    stopping: bool = False
    t0: float = field(default_factory=time.time)

    def near_restart(self, start: float, end: float) -> bool:
        """Whether [start, end] overlaps a gateway kill, its restart, or the reconnect storm after it."""
        return any(down - 1 <= end and up + RECONNECT_S >= start for down, up in self.restarts)

    @property
    def sock(self) -> Path:
        return self.home / "run" / "gateway.sock"

    def start(self) -> None:
        # this tree's code, not whatever `frontdesk` the environment finds (a worktree measures itself)
        env = {"FRONTDESK_PLUGINS": self.args.plugins, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        self.proc, _ = start_gateway(self.home, extra_env=env, args=["--log-level", "warning"], timeout=120)

    async def call(self, method: str, path: str, body: Any = None, timeout: float = 60, retry: bool = True) -> Any:
        """A request, retried (same body: keyed submissions stay idempotent) while the gateway restarts."""
        while True:
            try:
                status, payload = await http(self.sock, method, path, body, timeout)
            except Down:
                if not retry or self.stopping and method != "GET":
                    raise
                await asyncio.sleep(0.2 + random.random() * 0.3)
                continue
            if status == 503 and retry:
                await asyncio.sleep(0.2)
                continue
            return status, payload

    async def submit(self, job: Job, spec: dict[str, Any]) -> None:
        spec = {**spec, "idempotency_key": job.key}
        t = time.perf_counter()
        status, payload = await self.call("POST", "/v1/jobs", {"spec": spec, "context": {"cwd": str(self.home)}})
        if status != 200:
            raise RuntimeError(f"submit refused: {status} {payload}")
        job.submit_s = time.perf_counter() - t
        job.submitted_at = time.time()
        job.id = int(payload["id"])
        self.keys_seen.setdefault(job.key, set()).add(job.id)

    async def wait_one(self, job: Job) -> None:
        """Park a long-poll on one job until its report comes (re-parking across restarts)."""
        assert job.id is not None
        while True:
            try:
                status, payload = await self.call("POST", "/v1/wait", {"ids": [job.id], "timeout": 600}, timeout=700)
            except Down:
                continue
            if status == 200 and payload["done"]:
                job.woke_at = time.time()
                job.report = payload["reports"][0]
                return

    async def parked(self, job: Job, ready: asyncio.Event) -> None:
        """A parked waiter: counts itself ready once its first long-poll is in."""
        assert job.id is not None
        first = True
        while True:
            try:
                task = asyncio.ensure_future(
                    self.call("POST", "/v1/wait", {"ids": [job.id], "timeout": 600}, timeout=700, retry=False)
                )
                if first:
                    first = False
                    await asyncio.sleep(0.05)
                    ready.set()
                status, payload = await task
            except Down:
                await asyncio.sleep(0.5 + random.random())
                continue
            if status == 200 and payload["done"]:
                return


def job_command(runs: Path, seconds: float) -> list[str]:
    return ["/bin/sh", "-c", f"echo $FRONTDESK_JOB_ID $FRONTDESK_ATTEMPT >> '{runs}'; sleep {seconds:.2f}"]


async def kill_shepherd_later(s: Soak, job: Job) -> None:
    await asyncio.sleep(0.3)
    pidfile = s.home / "local" / f"{job.id}.1" / "shepherd.pid"
    for _ in range(50):
        if pidfile.exists() and (s.home / "local" / f"{job.id}.1" / "started.json").exists():
            try:
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
            except (OSError, ValueError):
                pass
            return
        await asyncio.sleep(0.1)


async def stream(s: Soak, runs: Path, waiters: list[asyncio.Task[None]]) -> None:
    """Keyed submissions at the given rate until the duration is up."""
    n = 0
    end = s.t0 + s.args.duration
    while time.time() < end:
        n += 1
        r = random.random()
        fate = "cancel" if r < 0.1 else "shepherd_kill" if r < 0.13 else "plain"
        job = Job(key=f"soak-{os.getpid()}-{n}", fate=fate)
        s.jobs.append(job)
        spec: dict[str, Any] = {"command": job_command(runs, random.uniform(0.05, 1.5 if fate != "plain" else 0.5))}
        if fate == "shepherd_kill":
            spec["retry"] = {"count": 1, "on": ["NODE_FAIL"]}

        async def one(job: Job = job, spec: dict[str, Any] = spec) -> None:
            await s.submit(job, spec)
            if job.fate == "cancel":
                await asyncio.sleep(random.uniform(0.0, 0.4))
                await s.call("POST", f"/v1/jobs/{job.id}/cancel")
            elif job.fate == "shepherd_kill":
                asyncio.ensure_future(kill_shepherd_later(s, job))
            await s.wait_one(job)

        waiters.append(asyncio.ensure_future(one()))
        await asyncio.sleep(random.expovariate(s.args.rate))


async def baseline(s: Soak, runs: Path) -> None:
    """Before any waiter is parked: the same kind of submissions, for latencies side by side."""
    tasks = []
    for n in range(s.args.baseline):
        job = Job(key=f"soak-{os.getpid()}-base-{n}", fate="base")
        s.jobs.append(job)

        async def one(job: Job = job) -> None:
            await s.submit(job, {"command": job_command(runs, random.uniform(0.05, 0.5))})
            await s.wait_one(job)

        tasks.append(asyncio.ensure_future(one()))
        await asyncio.sleep(random.expovariate(s.args.rate))
    await asyncio.gather(*tasks)


async def killer(s: Soak) -> None:
    """SIGKILL the gateway now and then, restart it at once (the restart window is recorded)."""
    if s.args.kill_every <= 0:
        return
    while time.time() < s.t0 + s.args.duration - 10:
        await asyncio.sleep(s.args.kill_every * random.uniform(0.7, 1.3))
        if time.time() >= s.t0 + s.args.duration - 10:
            return
        down = time.time()
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        await asyncio.to_thread(s.start)
        s.restarts.append((down, time.time()))


async def sampler(s: Soak) -> None:
    while not s.stopping:
        try:
            with open(f"/proc/{s.proc.pid}/status") as fh:
                rss = next(int(x.split()[1]) * 1024 for x in fh if x.startswith("VmRSS:"))
            s.rss.append((time.time() - s.t0, rss))
        except (OSError, StopIteration):
            pass
        await asyncio.sleep(5)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))] if s else float("nan")


def expected(job: Job) -> set[str]:
    if job.fate == "cancel":
        return {"CANCELLED", "COMPLETED"}  # a cancel that came after the end is refused (409)
    return {"COMPLETED"}  # a killed shepherd is fenced and its attempt retried once


async def main_async(s: Soak) -> dict[str, Any]:
    runs = s.home / "runs"
    gate = s.home / "gate"
    await baseline(s, runs)
    held_gate = Job(key="soak-gate", fate="held")
    await s.submit(held_gate, {"command": ["/bin/sh", "-c", f"while [ ! -e '{gate}' ]; do sleep 0.2; done"]})
    s.jobs.append(held_gate)
    held = [Job(key=f"soak-held-{i}", fate="held") for i in range(max(1, s.args.waiters // s.args.per_job))]
    for job in held:
        await s.submit(job, {"command": job_command(runs, 0.01), "depends_on": [held_gate.id]})
    s.jobs.extend(held)
    events = [asyncio.Event() for _ in range(s.args.waiters)]
    parked = [asyncio.ensure_future(s.parked(held[i % len(held)], events[i])) for i in range(s.args.waiters)]
    for i in range(0, len(events), 500):
        await asyncio.gather(*(e.wait() for e in events[i : i + 500]))
    settle = time.time()
    fast = 0
    while fast < 3:  # the gateway may still be taking the parked requests in: start the clock once it has
        t = time.perf_counter()
        await s.call("GET", "/v1/health")
        fast = fast + 1 if time.perf_counter() - t < 0.05 else 0
        await asyncio.sleep(0.2)
    print(
        f"{s.args.waiters} waiters parked on {len(held)} held jobs (settled in {time.time() - settle:.1f} s)",
        flush=True,
    )
    s.t0 = time.time()
    tasks: list[asyncio.Task[None]] = []
    side = [asyncio.ensure_future(killer(s)), asyncio.ensure_future(sampler(s))]
    await stream(s, runs, tasks)
    await side[0]
    gate.touch()
    print("stream over; draining", flush=True)
    await asyncio.gather(*tasks)
    await asyncio.gather(*parked)
    s.stopping = True
    side[1].cancel()
    return await audit(s, runs)


async def audit(s: Soak, runs: Path) -> dict[str, Any]:
    ids = [j.id for j in s.jobs if j.id is not None]
    reports: dict[int, dict[str, Any]] = {}
    for i in range(0, len(ids), 1000):
        _, payload = await s.call("POST", "/v1/wait", {"ids": ids[i : i + 1000], "timeout": 300}, timeout=400)
        reports.update({int(r["job_id"]): r for r in payload["reports"]})
    _, records = await s.call("GET", "/v1/jobs?limit=100000", timeout=300)
    ended = {int(r["id"]): r.get("ended_at") for r in records}
    for j in s.jobs:
        j.ended_at = ended.get(j.id or -1)
    events: list[dict[str, Any]] = []
    since = 0
    while True:
        _, page = await s.call("GET", f"/v1/events?since={since}", timeout=300)
        if not page:
            break
        events += page
        since = page[-1]["seq"]
    terminal = Counter(e["job_id"] for e in events if e["kind"] == "job.state" and e["data"].get("state") in TERMINAL)
    report_events = Counter(e["job_id"] for e in events if e["kind"] == "job.report")
    ran = Counter(tuple(line.split()) for line in runs.read_text().splitlines()) if runs.exists() else Counter()
    runs_per_job = Counter(job for job, _ in ran)
    lost = [j.id for j in s.jobs if j.id is None or j.id not in reports]
    dup = [k for k, v in s.keys_seen.items() if len(v) > 1]
    dup += [f"{k[0]}.{k[1]}" for k, n in ran.items() if n > 1]
    dup += [str(i) for i in ids if terminal[i] > 1 or report_events[i] > 1]
    dup += [str(i) for i in ids if i in reports and runs_per_job[str(i)] > int(reports[i]["attempts"])]
    wrong = [
        (j.id, reports[j.id]["state"])
        for j in s.jobs
        if j.id in reports and j.fate != "held" and reports[j.id]["state"] not in expected(j)
    ]
    wrong += [
        (j.id, reports[j.id]["state"])
        for j in s.jobs
        if j.fate == "held" and j.id in reports and reports[j.id]["state"] != "COMPLETED"
    ]
    wrong += [(i, "no terminal event") for i in ids if terminal[i] == 0]
    return {"lost": lost, "duplicated": dup, "wrong": wrong, "reports": reports}


def wake_latencies(s: Soak, fates: set[str]) -> tuple[list[float], list[float]]:
    """(seconds from a job's end to its waiter's answer, the same for ends that straddled a restart)."""
    clean: list[float] = []
    across: list[float] = []
    for j in s.jobs:
        if j.fate not in fates or j.woke_at is None or not j.ended_at:
            continue
        ended = float(j.ended_at)
        lat = max(0.0, j.woke_at - ended)
        straddles = s.near_restart(ended, j.woke_at)
        (across if straddles else clean).append(lat)
    return clean, across


def by_window(s: Soak, window: float) -> str:
    """Wake p99 per window of the run (clean wakes only): growth over the run shows as a rising p99."""
    rows: dict[int, list[float]] = {}
    for j in s.jobs:
        if j.fate in ("plain", "cancel", "shepherd_kill") and j.woke_at and j.ended_at:
            if not s.near_restart(float(j.ended_at), j.woke_at):
                rows.setdefault(int((float(j.ended_at) - s.t0) // window), []).append(j.woke_at - float(j.ended_at))
    return ", ".join(
        f"{k * window:.0f}s {pct(v, 99) * 1000:.0f} ms (n={len(v)})" for k, v in sorted(rows.items()) if k >= 0
    )


def since_restart(s: Soak) -> str:
    """Wake p99 by how long after the last gateway restart the job ended (clean wakes only)."""
    edges = [(RECONNECT_S, 30.0), (30.0, 60.0), (60.0, float("inf"))]
    rows: dict[int, list[float]] = {i: [] for i in range(len(edges) + 1)}
    for j in s.jobs:
        if j.fate not in ("plain", "cancel", "shepherd_kill") or not (j.woke_at and j.ended_at):
            continue
        ended = float(j.ended_at)
        if s.near_restart(ended, j.woke_at):
            continue
        ups = [up for _, up in s.restarts if up <= ended]
        after = ended - max(ups) if ups else None
        k = len(edges) if after is None else next((i for i, (a, b) in enumerate(edges) if a <= after < b), 0)
        rows[k].append(j.woke_at - ended)
    names = [f"{a:.0f}-{b:.0f} s".replace("-inf s", " s and later") for a, b in edges] + ["before the first kill"]
    return ", ".join(f"{names[k]}: {pct(v, 99) * 1000:.0f} ms (n={len(v)})" for k, v in rows.items() if v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=1800.0, help="seconds of load (default 30 min)")
    ap.add_argument("--waiters", type=int, default=5000)
    ap.add_argument("--rate", type=float, default=4.0, help="submissions per second")
    ap.add_argument("--kill-every", type=float, default=120.0, help="seconds between gateway kills (0: none)")
    ap.add_argument("--per-job", type=int, default=100, help="parked waiters per held job (default 100)")
    ap.add_argument("--baseline", type=int, default=200, help="submissions measured before waiters park")
    ap.add_argument("--plugins", default="none", help="FRONTDESK_PLUGINS for the gateway (default none)")
    ap.add_argument("--keep", action="store_true", help="keep the state directory")
    ap.add_argument("--window", type=float, default=300.0, help="seconds per window of the wake p99 by time")
    ap.add_argument(
        "--history", type=int, default=0, help="ended jobs stored before the gateway starts (a long run's table, now)"
    )
    args = ap.parse_args()
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.waiters * 2 + 1000)), hard))
    home = Path(tempfile.mkdtemp(prefix="fd-soak-", dir="/tmp"))
    fill_with(Path(__file__).resolve().parents[1] / "src", home, args.history)
    s = Soak(home, args)
    s.start()
    try:
        out = asyncio.run(main_async(s))
    finally:
        s.stopping = True
        if s.proc and s.proc.poll() is None:
            s.proc.send_signal(signal.SIGTERM)
            s.proc.wait(30)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    streamed = [j for j in s.jobs if j.submit_s is not None and j.submitted_at and j.fate not in ("held", "base")]
    near = {id(j): s.near_restart((j.submitted_at or 0) - (j.submit_s or 0), j.submitted_at or 0) for j in streamed}
    submit = [j.submit_s or 0.0 for j in streamed if not near[id(j)]]
    submit_near = [j.submit_s or 0.0 for j in streamed if near[id(j)]]
    base_submit = [j.submit_s for j in s.jobs if j.submit_s is not None and j.fate == "base"]
    clean, across = wake_latencies(s, {"plain", "cancel", "shepherd_kill"})
    base_wake, _ = wake_latencies(s, {"base"})
    fates = Counter(j.fate for j in s.jobs)
    print(
        f"\nsoak: {args.duration:.0f}s, {len(s.jobs)} jobs {dict(fates)}, {args.waiters} parked waiters, "
        f"{len(s.restarts)} gateway kills, plugins={args.plugins}, {args.history} ended jobs stored before"
    )
    print(f"lost {len(out['lost'])}   duplicated {len(out['duplicated'])}   wrong state {len(out['wrong'])}")
    for name in ("lost", "duplicated", "wrong"):
        if out[name]:
            print(f"  {name}: {out[name][:10]}")
    for label, sub, wake in (("no waiters", base_submit, base_wake), (f"{args.waiters} waiters", submit, clean)):
        a, b, c, d = (pct(sub, 50), pct(sub, 99), pct(wake, 50), pct(wake, 99))
        print(
            f"{label:>14}: submit p50 {a * 1000:.0f} ms p99 {b * 1000:.0f} ms (n={len(sub)})   "
            f"wake p50 {c * 1000:.0f} ms p99 {d * 1000:.0f} ms (n={len(wake)})"
        )
    print(
        f"within {RECONNECT_S:.0f} s of a gateway kill (not above): {len(submit_near)} submits, p50 "
        f"{pct(submit_near, 50):.1f} s p99 {pct(submit_near, 99):.1f} s; {len(across)} wakes, "
        f"p50 {pct(across, 50):.1f} s p99 {pct(across, 99):.1f} s"
    )
    print(f"wake p99 by {args.window:.0f} s window (when the job ended): {by_window(s, args.window)}")
    print(f"wake p99 by time since the last gateway restart: {since_restart(s)}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    if s.rss:
        print(
            "gateway RSS (MiB) over time: "
            + ", ".join(f"{t:.0f}s {r / 2**20:.0f}" for t, r in s.rss[:: max(1, len(s.rss) // 12)])
        )
        top, mean = max(r for _, r in s.rss) / 2**20, statistics.mean(r for _, r in s.rss) / 2**20
        print(f"gateway RSS max {top:.0f} MiB, mean {mean:.0f} MiB")
    if args.keep:
        print(f"state kept in {home}")
    return 0 if not (out["lost"] or out["duplicated"] or out["wrong"]) else 1


if __name__ == "__main__":
    sys.exit(main())
