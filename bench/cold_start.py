"""Cold start of the commands that sit on the agent's hot path, each a fresh process, beside `python -c pass`.

Run: .venv/bin/python bench/cold_start.py [--runs 30] [--baseline SRC]
Commands run as the agent runs them (the installed `frontdesk` console script), interleaved (round-robin) so
machine noise hits them alike; prints the median wall time and the mean CPU (user+sys, from rusage) of each,
and their ratios to a bare interpreter start (goal, issue 21: at most 2x). Both trees are byte-compiled first, as
an installed package is. With --baseline SRC (another tree's
src/, e.g. `git archive HEAD~3 src | tar -x -C /tmp/base`), every frontdesk command also runs on that tree
(PYTHONPATH), interleaved. Hook and shim entry points are measured by bench/agent_hook_coldstart.py and
bench/slurm_scale.py; the guard's by bench/guard_corpus.py.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable
FD = str(Path(PY).parent / "frontdesk")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--baseline", type=Path, help="another tree's src/ measured beside this one")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-cold-", dir="/tmp"))
    proc, client = start_gateway(home, extra_env={"FRONTDESK_PLUGINS": "none"})
    job = client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
    client.wait([job], "all", 30)
    env = {**os.environ, "FRONTDESK_HOME": str(home)}
    env.pop("PYTHONPATH", None)
    commands = {
        "frontdesk --version": [FD, "--version"],
        "frontdesk status ID --json": [FD, "status", str(job), "--json"],
        "frontdesk report ID": [FD, "report", str(job)],
        "frontdesk wait ID --json": [FD, "wait", str(job), "--json"],
        "frontdesk submit --help": [FD, "submit", "--help"],
    }
    cases: dict[str, tuple[list[str], dict[str, str]]] = {"python -c pass": ([PY, "-c", "pass"], env)}
    for name, argv in commands.items():
        cases[name] = (argv, env)
        if args.baseline:
            cases[f"  baseline: {name}"] = (argv, {**env, "PYTHONPATH": str(args.baseline.resolve())})
    for tree in [ROOT / "src", *([args.baseline] if args.baseline else [])]:
        # as pip installs them: compiled (PYTHONDONTWRITEBYTECODE would make every run compile from source)
        subprocess.run([PY, "-m", "compileall", "-q", str(tree)], check=True, stdout=subprocess.DEVNULL)
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    try:
        for _ in range(args.runs):
            for name, (argv, case_env) in cases.items():
                c, t = _cpu(), time.perf_counter()
                subprocess.run(argv, env=case_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                wall[name].append(time.perf_counter() - t)
                cpu[name].append(_cpu() - c)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        shutil.rmtree(home, ignore_errors=True)
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.runs} runs each, interleaved")
    base_w, base_c = statistics.median(wall["python -c pass"]), statistics.mean(cpu["python -c pass"])
    for name in cases:
        w, c = statistics.median(wall[name]), statistics.mean(cpu[name])
        print(
            f"{name:<40} wall p50 {w * 1000:6.1f} ms {w / base_w:4.2f}x   cpu {c * 1000:6.2f} ms {c / base_c:4.2f}x"
            "   (x: against python -c pass)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
