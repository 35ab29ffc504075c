#!/usr/bin/env python3
"""The hot path, measured side by side in one run: arrays, submissions, cold starts, wake latency.

    .venv/bin/python bench/hotpath.py [--jobs 1000] [--runs 15] [--wakes 120] [--no-slurm] [--baseline SRC]

Prints, against real gateway processes on the embedded backend (and the Slurm lab for the shims):
1. a 1,000-task array accepted (wall time of the one POST) and its one summary report (bytes);
2. submissions/s through the API: single (4 concurrent clients, jobs held by a dependency so this is
   acceptance alone) and batched (POST /v1/jobs/batch, 100 a request), with the gateway's CPU per job;
3. cold starts (median of fresh processes): `python -c pass`, CLI commands, the Stop hook, the squeue
   shims and the real `squeue` on the lab;
4. job end -> waiting client holding the report, p50/p99 (the job prints the time and exits at once).
With --baseline SRC (an exported older tree's src/), items 2-4 run on both trees, interleaved, in two
columns. Machines here are shared and noisy: compare the columns and ratios, not absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from history import fill_with  # noqa: E402  (bench/history.py)

from frontdesk.client import Client  # noqa: E402
from frontdesk.errors import FrontdeskError  # noqa: E402

PY = sys.executable
LAB = Path(os.environ.get("FRONTDESK_SLURM_LAB", "/var/lib/frontdesk-slurm-lab"))
WAKE_JOB = ["sh", "-c", "sleep 0.2; exec date +%s.%N"]
STOP = json.dumps({"session_id": "bench", "cwd": "/tmp", "hook_event_name": "Stop", "transcript_path": ""})


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))] if s else float("nan")


class Gateway:
    """`frontdesk serve` from a given source tree, in a temporary home."""

    def __init__(
        self, src: Path, config: str = "", plugins: str | None = "none", slurm: bool = False, history: int = 0
    ) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="fd-hot-", dir="/tmp"))
        self.src = src
        fill_with(src, self.home, history)  # a long run's ended jobs, stored before the gateway starts
        if config:
            (self.home / "frontdesk.toml").write_text(config)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
        self.env.update(FRONTDESK_HOME=str(self.home), FRONTDESK_NO_AUTOSTART="1", PYTHONPATH=str(src))
        if plugins is not None:
            self.env["FRONTDESK_PLUGINS"] = plugins
        if slurm:
            self.env["SLURM_CONF"] = str(LAB / "etc" / "slurm.conf")
        log = open(self.home / "gateway.log", "ab")
        self.proc = subprocess.Popen(
            [PY, "-m", "frontdesk.cli.main", "serve"], env=self.env, stdout=log, stderr=log, start_new_session=True
        )
        log.close()
        self.client = Client(socket_path=self.home / "run" / "gateway.sock", timeout=120, autostart=False)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client.health()
                return
            except FrontdeskError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError((self.home / "gateway.log").read_text()[-2000:]) from None
                time.sleep(0.05)

    def cpu(self) -> float:
        """CPU seconds the gateway process has used."""
        fields = (Path("/proc") / str(self.proc.pid) / "stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.home, ignore_errors=True)


def array_accept(gw: Gateway, size: int) -> str:
    """One POST of a `size`-task array, then its one report once every task ended."""
    spec = {"command": ["sh", "-c", 'echo "loss=0.$FRONTDESK_ARRAY_TASK_ID"'], "array": f"0-{size - 1}"}
    t0 = time.perf_counter()
    try:
        job = gw.client.submit(spec=spec, context={"cwd": "/tmp"})
    except FrontdeskError as exc:
        return f"n/a (arrays not landed: {exc})"
    accepted = time.perf_counter() - t0
    if "array" not in job:
        return "n/a (arrays not landed)"
    done = gw.client.wait([job["id"]], "all", 1800)
    ran = time.perf_counter() - t0
    report = done["reports"][0] if done["reports"] else {}
    text = str(report.get("text", ""))
    return (
        f"{size}-task array accepted in {accepted * 1000:.0f} ms (one POST); all tasks ended after {ran:.0f} s; "
        f"its one report: {len(json.dumps(report).encode())} bytes JSON, text {len(text.encode())} bytes"
    )


def _threads(n: int, work: Any) -> float:
    """Wall seconds of n threads running `work`; the first error of any thread is raised here."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except Exception as exc:
            errors.append(exc)

    ts = [threading.Thread(target=run) for _ in range(n)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def submits(gw: Gateway, jobs: int, threads: int) -> dict[str, str]:
    """Single and batched acceptance (held behind a running job), jobs/s and gateway CPU per job."""
    gate = gw.client.submit(spec={"command": ["sleep", "3600"]}, context={"cwd": "/tmp"})["id"]
    spec = {"command": ["true"], "resources": {"memory": "16M"}, "depends_on": [gate]}
    per = jobs // threads

    def single() -> None:
        c = Client(socket_path=gw.client.socket_path, autostart=False)
        for _ in range(per):
            c.submit(spec=spec, context={"cwd": "/tmp"})

    cpu0, mine0 = gw.cpu(), time.process_time()
    wall = _threads(threads, single)
    n = per * threads
    out = {
        "single": f"{n / wall:7.0f} jobs/s, {(gw.cpu() - cpu0) / n * 1000:.2f} ms CPU/job"
        f" (clients {(time.process_time() - mine0) / n * 1000:.2f})"
    }
    env = {k: v for k, v in os.environ.items() if k not in ("FRONTDESK_TOKEN",)}
    body = {"jobs": [{"spec": spec}] * 100, "context": {"cwd": "/tmp", "env": env}}
    batches = max(1, jobs // 100)

    def batched() -> None:
        c = Client(socket_path=gw.client.socket_path, autostart=False)
        for _ in range(batches // threads or 1):
            c.request("POST", "/v1/jobs/batch", body)

    cpu0 = gw.cpu()
    try:
        wall = _threads(threads, batched)
        n = (batches // threads or 1) * threads * 100
        out["batched"] = f"{n / wall:7.0f} jobs/s, {(gw.cpu() - cpu0) / n * 1000:.2f} ms CPU/job (100 a request)"
    except FrontdeskError as exc:
        out["batched"] = f"n/a (no batch endpoint: {str(exc)[:60]})"
    gw.client.cancel(gate)  # its shepherd would outlive the gateway (by design), sleeping for an hour
    return out


def submit_rounds(trees: dict[str, Path], jobs: int, threads: int, rounds: int) -> int:
    """Item 2 alone, `rounds` times, the trees interleaved (a fresh gateway each), with the load average."""
    print(f"2. submissions through the API ({jobs} jobs, {threads} concurrent clients), {rounds} rounds")
    for n in range(rounds):
        for tree, src in trees.items():
            gw = Gateway(src)
            try:
                load = os.getloadavg()[0]
                for kind, line in submits(gw, jobs, threads).items():
                    print(f"   {n + 1} {tree:<10} {kind:<8} {line}   (load {load:.1f})", flush=True)
            finally:
                gw.stop()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


def wakes(gw: Gateway, n: int) -> list[float]:
    """Seconds from a job's last output (it exits right after) to its waiting client holding the report."""
    out = []
    for _ in range(n):
        job = gw.client.submit(spec={"command": WAKE_JOB}, context={"cwd": "/tmp", "env": {"PATH": "/usr/bin:/bin"}})
        rep = gw.client.wait([job["id"]], "all", 60)["reports"][0]
        got = time.time()
        out.append(got - float(rep["stdout_tail"][-1]))
    return out


def cold_cases(gw: Gateway, job: int, shims: Path | None, slurm_env: dict[str, str] | None) -> dict[str, Any]:
    """name -> (argv, env, stdin) of each fresh-process case."""
    exe = str(Path(PY).parent / "frontdesk")
    cases: dict[str, Any] = {
        "python -c pass": ([PY, "-c", "pass"], gw.env, None),
        "frontdesk --version": ([exe, "--version"], gw.env, None),
        "frontdesk submit --help": ([exe, "submit", "--help"], gw.env, None),
        "frontdesk status ID --json": ([exe, "status", str(job), "--json"], gw.env, None),
        "frontdesk report ID": ([exe, "report", str(job)], gw.env, None),
        "frontdesk hook stop (Claude Code)": ([exe, "hook", "stop", "--harness", "claude-code"], gw.env, STOP),
    }
    if shims is not None and slurm_env is not None:
        cases["squeue --me (real, Slurm lab)"] = (["squeue", "--me"], slurm_env, None)
        cases["squeue --me (sh shim: the gateway's file)"] = ([str(shims / "squeue"), "--me"], slurm_env, None)
        cases["squeue --me (socket-only client)"] = ([str(shims / ".full" / "squeue-socket"), "--me"], slurm_env, None)
        cases["squeue --me (full Python shim)"] = ([str(shims / ".full" / "squeue"), "--me"], slurm_env, None)
    return cases


def cold_starts(cases: dict[str, dict[str, Any]], runs: int) -> dict[str, dict[str, float]]:
    """tree -> case -> median seconds; every case of every tree run round-robin so noise hits them alike."""
    times: dict[str, dict[str, list[float]]] = {t: {c: [] for c in cs} for t, cs in cases.items()}
    for _ in range(runs):
        for tree, cs in cases.items():
            for name, (argv, env, stdin) in cs.items():
                t0 = time.perf_counter()
                subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60)
                times[tree][name].append(time.perf_counter() - t0)
    return {t: {c: statistics.median(v) for c, v in cs.items()} for t, cs in times.items()}


def slurm_gateway(src: Path) -> tuple[Gateway, Path, dict[str, str]] | None:
    """A gateway on the Slurm lab with the squeue shims installed, or None without the lab."""
    if not (LAB / "etc" / "slurm.conf").exists() or shutil.which("squeue") is None:
        return None
    subprocess.run([str(ROOT / "scripts" / "slurm-lab"), "up"], capture_output=True, timeout=300)  # idempotent
    config = '[gateway]\nbackend = "slurm"\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 2\n'
    gw = Gateway(src, config=config, plugins=None, slurm=True)
    shims = gw.home / "shims"
    subprocess.run(
        [PY, "-m", "frontdesk.cli.main", "shim", "install", str(shims)], env=gw.env, check=True, capture_output=True
    )
    return gw, shims, {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--jobs", type=int, default=1000, help="jobs per submission measurement and array size")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--runs", type=int, default=15, help="fresh processes per cold-start case")
    ap.add_argument("--wakes", type=int, default=120, help="jobs per wake-latency measurement (p99: 100 or more)")
    ap.add_argument("--no-slurm", action="store_true", help="skip the shims on the Slurm lab")
    ap.add_argument("--no-array", action="store_true", help="skip the array (it runs every task: minutes)")
    ap.add_argument("--baseline", type=Path, help="another tree's src/ measured beside this one")
    ap.add_argument("--history", type=int, default=0, help="ended jobs stored before the wake gateways start")
    ap.add_argument("--only-wakes", action="store_true", help="measure item 4 alone")
    ap.add_argument(
        "--wake-plugins", choices=("none", "default"), default="none", help="plug-ins of the wake gateways (item 4)"
    )
    ap.add_argument("--only-submits", type=int, metavar="ROUNDS", help="measure item 2 alone, ROUNDS times")
    args = ap.parse_args()
    trees = {"this tree": ROOT / "src", **({"baseline": args.baseline} if args.baseline else {})}
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    if args.only_submits:
        return submit_rounds(trees, args.jobs, args.threads, args.only_submits)
    if not args.no_array and not args.only_wakes:
        gw = Gateway(trees["this tree"])
        try:
            print("1. array:", array_accept(gw, args.jobs))
        finally:
            gw.stop()
    if not args.only_wakes:
        print(f"2. submissions through the API ({args.jobs} jobs, {args.threads} concurrent clients)")
    for tree, src in trees.items() if not args.only_wakes else ():
        gw = Gateway(src)
        try:
            for kind, line in submits(gw, args.jobs, args.threads).items():
                print(f"   {tree:<10} {kind:<8} {line}")
        finally:
            gw.stop()
    plugins = "none" if args.wake_plugins == "none" else None
    gws = {tree: Gateway(src, history=args.history, plugins=plugins) for tree, src in trees.items()}
    lab = None if args.no_slurm or args.only_wakes else slurm_gateway(trees["this tree"])
    try:
        if not args.only_wakes:
            cold(gws, lab, args.runs)
        lat: dict[str, list[float]] = {t: [] for t in gws}
        load0 = os.getloadavg()[0]
        for _ in range(3):  # interleaved rounds: the trees share the machine's noise
            for tree, g in gws.items():
                lat[tree] += wakes(g, max(1, args.wakes // 3))
        print(
            "4. job end -> waiting client holding the report (the job prints the time and exits at once)"
            + (f"; {args.history} ended jobs stored before" if args.history else "")
            + ("; default plug-ins" if plugins is None else "")
            + f"; load average {load0:.1f} -> {os.getloadavg()[0]:.1f} while measured"
        )
        for tree, v in lat.items():
            print(f"   {tree:<10} p50 {pct(v, 50) * 1000:6.1f} ms   p99 {pct(v, 99) * 1000:6.1f} ms   ({len(v)} jobs)")
    finally:
        for g in gws.values():
            g.stop()
        if lab is not None:
            lab[0].stop()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


def cold(gws: dict[str, Gateway], lab: tuple[Gateway, Path, dict[str, str]] | None, runs: int) -> None:
    """Print the cold starts of every case, per tree, with the ratio to `python -c pass`."""
    cases = {}
    for tree_src in {str(g.src) for g in gws.values()}:
        # as pip installs them: compiled (PYTHONDONTWRITEBYTECODE would make every run compile from source)
        subprocess.run([PY, "-m", "compileall", "-q", tree_src], check=True, stdout=subprocess.DEVNULL)
    for tree, g in gws.items():
        job = g.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
        g.client.wait([job], "all", 60)
        with_lab = lab if tree == "this tree" else None
        cases[tree] = cold_cases(g, job, with_lab[1] if with_lab else None, with_lab[2] if with_lab else None)
    med = cold_starts(cases, runs)
    print(f"3. cold starts (median of {runs} fresh processes; x = ratio to python -c pass)")
    for name in cases["this tree"]:
        row = f"   {name:<34}"
        for tree in gws:
            if name in med[tree]:
                base = med[tree]["python -c pass"]
                row += f"  {tree}: {med[tree][name] * 1000:6.1f} ms {med[tree][name] / base:4.1f}x"
        print(row)


if __name__ == "__main__":
    raise SystemExit(main())
