#!/usr/bin/env python3
"""The shield at 10, 50 and 200 agents, and the gateway's own controller load, on the Slurm lab, in one run.

    .venv/bin/python bench/slurm_scale.py [--agents 10,50,200] [--period 2] [--duration 20] [--idle 30]
        [--poll me|job]

Needs root and the lab. Prints, side by side:
1. for each agent count, real `squeue --me -h` against the shim: controller RPCs (sdiag deltas, job-info
   messages; the lab is shared, so other users' RPCs are in both columns), calls served, and CPU seconds
   spent by the clients (children's user+sys) and by the gateway process (the shim's server side);
2. cold start p50 of one call: real squeue, the `sh` shim (the gateway's rendered file), the socket-only
   Python client, the full Python shim; and the CPU one call costs its client, one call at a time, for
   each candidate client side by side (real squeue, the `sh` shim reading its file, the socket-only Python
   client, `sh` + `curl --unix-socket` with the same request, `python3 -I -S -c pass`, `sh -c :`);
3. the gateway's own Slurm commands per minute at idle and during a cancel storm (50 jobs cancelled at once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from slurm_shield import LAB, ROOT, Gateway, agents, job_rpcs, sdiag, timed  # noqa: E402

CURL = (
    '{ printf "uid=%s\\0--" 0; for a; do printf "\\0%s" "$a"; done; } | '
    'exec curl -s --unix-socket "$FD_SOCK" --data-binary @- http://frontdesk/v1/slurm/text/squeue'
)
"""The candidate `sh` + `curl --unix-socket` client: the socket client's request, the body on a pipe (a shell
variable cannot hold its NULs); the reply's X-Exit/X-Stderr-Hex headers are not read, so it is a lower bound."""


def proc_cpu(pid: int) -> float:
    """CPU seconds (user+sys) of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def queries(gw: Gateway) -> int:
    """The gateway's own full-table controller queries so far (the lab is shared: sdiag counts everyone's)."""
    return int(gw.client.request("GET", "/v1/cluster")["slurm"]["controller_queries"])


def phase(n: int, env: dict[str, str], args: argparse.Namespace, gw_pid: int, gw: Gateway) -> dict[str, Any]:
    before, c0, g0, q0 = sdiag(), children_cpu(), proc_cpu(gw_pid), queries(gw)

    def poll(i: int) -> None:
        argv = ["squeue", "--me", "-h"] if args.poll == "me" else ["squeue", "-j", args.job_ids[i], "-h", "-o", "%T"]
        subprocess.run(argv, env=env, capture_output=True, check=False)

    calls = agents(n, args.period, args.duration, poll, indexed=True)
    after = sdiag()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    return {
        "calls": calls,
        "rpcs": job_rpcs(delta),
        "client_cpu": children_cpu() - c0,
        "gateway_cpu": proc_cpu(gw_pid) - g0,
        "gateway_queries": queries(gw) - q0,
    }


def cpu_per_call(argv: list[str], env: dict[str, str], n: int) -> float:
    """Milliseconds of CPU (user+sys) one call costs its client, over n calls made one after another."""
    c0 = children_cpu()
    for _ in range(n):
        subprocess.run(argv, env=env, capture_output=True, check=False)
    return (children_cpu() - c0) * 1000 / n


def commands(gw: Gateway) -> dict[str, int]:
    info = gw.client.request("GET", "/v1/cluster")["slurm"]
    return dict(info.get("controller_commands") or {})


def per_minute(a: dict[str, int], b: dict[str, int], seconds: float) -> str:
    keys = sorted(set(a) | set(b))
    parts = [f"{k} {(b.get(k, 0) - a.get(k, 0)) * 60 / seconds:.1f}" for k in keys if b.get(k, 0) != a.get(k, 0)]
    return ", ".join(parts) or "none"


def storm(gw: Gateway, jobs: int) -> tuple[dict[str, int], dict[str, int], float]:
    ids = [
        gw.client.submit(spec={"command": ["sleep", "600"], "name": f"storm{i}", "pool": "test"})["id"]
        for i in range(jobs)
    ]
    time.sleep(3)
    before, t0 = commands(gw), time.monotonic()
    for job_id in ids:
        gw.client.cancel(job_id)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(gw.client.job(i)["state"] == "CANCELLED" for i in ids):
            break
        time.sleep(0.5)
    time.sleep(max(0.0, 10 - (time.monotonic() - t0)))
    return before, commands(gw), time.monotonic() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", default="10,50,200")
    p.add_argument("--period", type=float, default=2.0)
    p.add_argument("--duration", type=float, default=20.0, help="seconds per phase")
    p.add_argument("--idle", type=float, default=30.0, help="seconds of idle measurement")
    p.add_argument("--storm", type=int, default=50)
    p.add_argument(
        "--poll",
        choices=("me", "job"),
        default="me",
        help="me: every agent runs `squeue --me -h` (one answer for all); job: each agent polls its own held job, "
        "`squeue -j ID -h -o %%T` (a command line, and a file, per agent)",
    )
    args = p.parse_args()
    if os.geteuid() != 0:
        print("slurm_scale: needs root for the lab cluster (scripts/slurm-lab up)")
        return 2
    subprocess.run([str(ROOT / "scripts" / "slurm-lab"), "up"], check=True, capture_output=True)
    os.environ["SLURM_CONF"] = str(LAB / "etc" / "slurm.conf")
    shim_dir = Path(tempfile.mkdtemp(prefix="fd-shims-"))
    gw = Gateway(tick=5.0, refresh=2.0, push=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "frontdesk.cli.main", "shim", "install", str(shim_dir)],
            check=True,
            capture_output=True,
            env=gw.env,
        )
        real_env = {**gw.env}
        shim_env = {**gw.env, "PATH": f"{shim_dir}:{os.environ['PATH']}"}
        print(f"# load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        args.job_ids = []
        if args.poll == "job":
            most = max(int(x) for x in args.agents.split(",") if x.strip())
            args.job_ids = [
                subprocess.run(
                    ["sbatch", "--parsable", "--hold", "-p", "test", "-J", f"poll{i}", "--wrap", "true"],
                    env=real_env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
                for i in range(most)
            ]
            time.sleep(2.5)  # past the shield's refresh: the gateway's view holds them
        what = "`squeue --me -h`" if args.poll == "me" else "`squeue -j <its own held job> -h -o %T`"
        print(f"# each agent runs {what} every {args.period:g} s for {args.duration:g} s")
        print(
            "agents | calls real/shim | job-info RPCs real/shim (ratio) | client CPU s real/shim (shim/real) "
            "| gateway CPU s (shim) | gateway's own queries (shim)"
        )
        met = []
        for n in [int(x) for x in args.agents.split(",") if x.strip()]:
            real = phase(n, real_env, args, gw.proc.pid, gw)
            shim = phase(n, shim_env, args, gw.proc.pid, gw)
            ratio = shim["client_cpu"] / max(1e-9, real["client_cpu"])
            met.append((n, ratio <= 1.0, real["rpcs"] / max(1, shim["rpcs"])))
            print(
                f"{n:>6} | {real['calls']:>5} / {shim['calls']:<5} | {real['rpcs']:>6} / {shim['rpcs']:<5} "
                f"({real['rpcs'] / max(1, shim['rpcs']):.0f}x) | "
                f"{real['client_cpu']:6.2f} / {shim['client_cpu']:<6.2f} ({ratio:.2f}) "
                f"| {shim['gateway_cpu']:.2f} (real phase {real['gateway_cpu']:.2f}) "
                f"| {shim['gateway_queries']}"
            )
        for n, cpu_ok, rpc_ratio in met:
            rpc_goal = f"; >= 100x fewer job-info RPCs: {'met' if rpc_ratio >= 100 else 'NOT met'}" if n >= 200 else ""
            print(f"goal at {n} agents: shim client CPU <= real squeue's: {'met' if cpu_ok else 'NOT met'}{rpc_goal}")
        full = shim_dir / ".full" / "squeue"
        socket_client = shim_dir / ".full" / "squeue-socket"
        sq = ["--me", "-h"]
        subprocess.run([str(shim_dir / "squeue"), *sq], env=shim_env, capture_output=True, check=False)
        time.sleep(0.5)  # the first call asked the socket and registered the command line for a file
        cold = {
            "real squeue": timed(["squeue", *sq], real_env, 30),
            "sh shim (file)": timed([str(shim_dir / "squeue"), *sq], shim_env, 30),
            "socket-only client": timed([str(socket_client), *sq], shim_env, 30),
            "full Python shim": timed([str(full), *sq], {**shim_env, "FRONTDESK_SHIM_DIR": str(shim_dir)}, 30),
        }
        print("cold start p50   " + "   ".join(f"{k} {statistics.median(v) * 1000:.1f} ms" for k, v in cold.items()))
        per_call = {
            "real squeue": cpu_per_call(["squeue", *sq], real_env, 300),
            "sh shim (file)": cpu_per_call([str(shim_dir / "squeue"), *sq], shim_env, 300),
            "socket-only client": cpu_per_call([str(socket_client), *sq], shim_env, 300),
            "python3 -I -S -c pass": cpu_per_call(["/usr/bin/python3", "-I", "-S", "-c", "pass"], real_env, 300),
            "sh -c :": cpu_per_call(["sh", "-c", ":"], real_env, 300),
        }
        if shutil.which("curl"):
            per_call["sh + curl --unix-socket"] = cpu_per_call(
                ["sh", "-c", CURL, "curl", *sq], {**shim_env, "FD_SOCK": str(gw.home / "run" / "gateway.sock")}, 300
            )
        print("client CPU per call   " + "   ".join(f"{k} {v:.2f} ms" for k, v in per_call.items()))
        a, t0 = commands(gw), time.monotonic()
        time.sleep(args.idle)
        print(f"gateway Slurm commands per minute, idle, no jobs: {per_minute(a, commands(gw), time.monotonic() - t0)}")
        running = [
            gw.client.submit(spec={"command": ["sleep", "600"], "name": f"idle{i}", "pool": "test"})["id"]
            for i in range(10)
        ]
        time.sleep(3)
        a, t0 = commands(gw), time.monotonic()
        time.sleep(args.idle)
        print(
            f"gateway Slurm commands per minute, idle, 10 jobs running (tick 5 s): "
            f"{per_minute(a, commands(gw), time.monotonic() - t0)}"
        )
        for job_id in running:
            gw.client.cancel(job_id)
        before, after, secs = storm(gw, args.storm)
        print(
            f"gateway Slurm commands per minute, cancel storm of {args.storm} ({secs:.0f} s): "
            f"{per_minute(before, after, secs)}"
        )
        print(f"# load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if getattr(args, "job_ids", None):
            subprocess.run(["scancel", *args.job_ids], capture_output=True, check=False)
        gw.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
