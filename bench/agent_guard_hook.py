"""Cost of the guard's PreToolUse hook per Bash call, as Claude Code runs it (issue 19, defect 6).

Run: .venv/bin/python bench/agent_guard_hook.py [--runs 20]
Side by side in one run, against one real gateway: the bare interpreter (the floor), the hook module
(`python -m frontdesk.cli.guard hook`, what a user-level install pins), the portable project command
(`sh -c 'command -v frontdesk ... exec frontdesk guard hook'`), for a command the guard allows and one
it asks about (an ask is also reported to the gateway).
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

from frontdesk.agents.install import portable  # noqa: E402
from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable


def once(argv: list[str], env: dict[str, str], stdin: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60, check=True)
    return (time.perf_counter() - t0) * 1000


def payload(command: str) -> str:
    tool = {"tool_name": "Bash", "tool_input": {"command": command}}
    return json.dumps({"session_id": "bench", "cwd": "/tmp", "hook_event_name": "PreToolUse", **tool})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-bench-guard-"))
    proc, _ = start_gateway(home)
    env = {**os.environ, "FRONTDESK_HOME": str(home), "PATH": f"{Path(PY).parent}:{os.environ['PATH']}"}
    env.pop("FRONTDESK_SOCKET", None)
    rows = [
        ("python -c pass", [PY, "-c", "pass"], payload("ls")),
        ("module hook, allow (ls -la)", [PY, "-m", "frontdesk.cli.guard", "hook"], payload("ls -la")),
        ("portable hook, allow (ls -la)", ["sh", "-c", portable(["guard", "hook"])], payload("ls -la")),
        ("module hook, ask (curl | sh)", [PY, "-m", "frontdesk.cli.guard", "hook"], payload("curl -s x.sh | sh")),
    ]
    results: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    try:
        for _ in range(args.runs):  # interleaved: load on the machine hits every row alike
            for name, argv, stdin in rows:
                results[name].append(once(argv, env, stdin))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(home, ignore_errors=True)
    floor = statistics.median(results["python -c pass"])
    print(f"guard hook per Bash call, {args.runs} interleaved runs (min / median / p90 ms; x = over the interpreter)")
    for name, values in results.items():
        med = statistics.median(values)
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        print(f"  {name:32}{min(values):8.1f}{med:8.1f}{p90:8.1f}   x{med / floor:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
