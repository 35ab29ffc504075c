"""Cold start of a hook: every Claude Code / Codex hook run is a fresh process on the agent's hot path.

Run: .venv/bin/python bench/agent_hook_coldstart.py [--runs 20] [--baseline REV]
Measures, side by side against one real gateway: `python -c pass` (the floor), the installed command
`frontdesk hook stop` (console script → CLI parser → handler → one gateway round trip), and the handler
module alone (`python -m frontdesk.agents.hooks stop`). Nothing runs for the session, so the Stop hook
answers at once: this is the per-turn cost an agent pays when it has no job. With --baseline REV, the two hook
rows run again from that commit's tree (git archive, compiled first, on PYTHONPATH), interleaved with the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable


def timed(argv: list[str], env: dict[str, str], stdin: str, runs: int) -> list[tuple[float, float]]:
    """(wall ms, CPU ms of the process) per run."""
    out = []
    for _ in range(runs):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000
        out.append(((time.perf_counter() - t0) * 1000, cpu))
    return out


def baseline_src(rev: str, into: Path) -> Path:
    """The src/ of commit `rev`, unpacked under `into` and compiled (no row pays for writing bytecode)."""
    root = Path(__file__).resolve().parents[1]
    tar = subprocess.run(["git", "-C", str(root), "archive", rev, "src"], capture_output=True, check=True, timeout=60)
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True, timeout=60)
    subprocess.run([PY, "-m", "compileall", "-q", str(into / "src")], check=True, timeout=300)
    return into / "src"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--baseline", default=None, help="a commit whose hook rows run interleaved with this tree's")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-bench-hook-"))
    proc, _ = start_gateway(home)
    env = {**os.environ, "FRONTDESK_HOME": str(home)}
    env.pop("FRONTDESK_SOCKET", None)
    payload = json.dumps(
        {
            "session_id": "bench-session",
            "cwd": "/tmp",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "transcript_path": "/tmp/t.jsonl",
        }
    )
    exe = str(Path(PY).parent / "frontdesk")
    hooks = [
        ("frontdesk hook stop", [exe, "hook", "stop", "--harness", "claude-code"]),
        ("python -m frontdesk.agents.hooks", [PY, "-m", "frontdesk.agents.hooks", "stop"]),
    ]
    rows = [("python -c pass", [PY, "-c", "pass"], env), *((name, argv, env) for name, argv in hooks)]
    if args.baseline:
        old = {**env, "PYTHONPATH": str(baseline_src(args.baseline, home))}
        rows += [(f"{name} @{args.baseline[:8]}", argv, old) for name, argv in hooks]
    try:
        results: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in rows}
        for _ in range(args.runs):  # interleaved, so load on the machine hits every row alike
            for name, argv, row_env in rows:
                results[name] += timed(argv, row_env, payload, 1)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(home, ignore_errors=True)
    floor = statistics.median(w for w, _ in results["python -c pass"])
    cpu_floor = statistics.median(c for _, c in results["python -c pass"])
    print(
        f"hook cold start, {args.runs} interleaved runs each (wall min / median / p90 ms, x = median over the bare "
        f"interpreter; CPU median ms, x; load average {open('/proc/loadavg').read().split()[0]} at the end)"
    )
    for name, values in results.items():
        wall, cpu = sorted(w for w, _ in values), statistics.median(c for _, c in values)
        med, p90 = statistics.median(wall), wall[int(0.9 * (len(wall) - 1))]
        print(f"  {name:44}{wall[0]:8.1f}{med:8.1f}{p90:8.1f}   x{med / floor:.1f}{cpu:8.1f}   x{cpu / cpu_floor:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
