"""Cold start of a hook: every Claude Code / Codex hook run is a fresh process on the agent's hot path.

Run: .venv/bin/python bench/agent_hook_coldstart.py [--runs 20]
Measures, side by side against one real gateway: `python -c pass` (the floor), the installed command
`frontdesk hook stop` (console script → CLI parser → handler → one gateway round trip), and the handler
module alone (`python -m frontdesk.agents.hooks stop`). Nothing runs for the session, so the Stop hook
answers at once: this is the per-turn cost an agent pays when it has no job.
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable


def timed(argv: list[str], env: dict[str, str], stdin: str, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60, check=True)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
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
    rows = [
        ("python -c pass", [PY, "-c", "pass"]),
        ("frontdesk hook stop", [exe, "hook", "stop", "--harness", "claude-code"]),
        ("python -m frontdesk.agents.hooks", [PY, "-m", "frontdesk.agents.hooks", "stop"]),
    ]
    try:
        results: dict[str, list[float]] = {name: [] for name, _ in rows}
        for _ in range(args.runs):  # interleaved, so load on the machine hits every row alike
            for name, argv in rows:
                results[name] += timed(argv, env, payload, 1)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(home, ignore_errors=True)
    floor = statistics.median(results["python -c pass"])
    print(
        f"hook cold start, {args.runs} interleaved runs each (min / median / p90 ms; x = median over "
        "the bare interpreter)"
    )
    for name, values in results.items():
        med = statistics.median(values)
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        print(f"  {name:34}{min(values):8.1f}{med:8.1f}{p90:8.1f}   x{med / floor:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
