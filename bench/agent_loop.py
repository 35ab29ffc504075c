"""One agent loop, two ways: what enters the agent's context, and how soon it holds the result.

Run: .venv/bin/python bench/agent_loop.py [--seconds 120] [--poll 30] [--tail-lines 20]

Both loops run side by side in one run against one real gateway (embedded backend), each with its own
job: a training-like script that prints a log line every half second for `--seconds`.
- polling: what agents do without frontdesk: every `--poll` seconds run a status command
  (`frontdesk queue`, the squeue of this machine) and `tail -n 20` of the log; every command line and
  its output enters the context; it holds the result at the first poll after the job ended.
- frontdesk: `frontdesk run` (its output enters the context), then the Stop hook (the real
  `frontdesk hook stop` process) holds the turn without tokens and returns the report: the only other
  text that enters the context.
Byte counts are exact for this run; the end→result time is measured from the job's recorded end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable
JOB = (
    "import sys, time\n"
    "n = int(float(sys.argv[1]) * 2)\n"
    "for i in range(n):\n"
    "    print(f'step {i:5d}/{n} loss {2.0 / (1 + i):.4f} lr 3e-4 tok/s 51234 gpu_mem 31.2G',\n"
    "          flush=True)\n"
    "    time.sleep(0.5)\n"
    "print('final: loss 0.0123 acc 0.987 saved checkpoint to ckpt/last.pt', flush=True)\n"
)


def cli(env: dict[str, str], *args: str, stdin: str | None = None, timeout: float = 600) -> tuple[str, float]:
    """Run the real CLI; (stdout, end time)."""
    res = subprocess.run(
        [PY, "-m", "frontdesk.cli.main", *args], env=env, capture_output=True, text=True, input=stdin, timeout=timeout
    )
    return res.stdout, time.time()


def polling_agent(
    env: dict[str, str], work: Path, seconds: float, poll: float, tail: int, phase: float, out: dict[str, float]
) -> None:
    cmd = ["run", "--name", "poll-train", "--workdir", str(work), "--", PY, str(work / "train.py"), str(seconds)]
    text, _ = cli(env, *cmd)
    context = len(("frontdesk " + " ".join(cmd)).encode()) + len(text.encode())
    job = text.strip()
    calls = 1
    log_path = None
    started = time.time()
    n = 0
    while True:
        n += 1  # polls on a fixed schedule (phase + k*poll after submission), as a sleep-30 loop would
        time.sleep(max(0.0, started + phase + (n - 1) * poll - time.time()))
        status_cmd = "frontdesk queue"
        status, _ = cli(env, "queue")
        calls += 1
        context += len(status_cmd.encode()) + len(status.encode())
        if log_path is None:  # the agent knows where its job writes (here: the embedded backend's file)
            rec = json.loads(cli(env, "status", job, "--json")[0])
            launch = Path(env["FRONTDESK_HOME"]) / "local" / str(rec["backend_id"]) / "launch.json"
            log_path = Path(json.loads(launch.read_text())["stdout"])
        tail_cmd = f"tail -n {tail} {log_path}"
        tailed = subprocess.run(["tail", "-n", str(tail), str(log_path)], capture_output=True, text=True).stdout
        calls += 1
        context += len(tail_cmd.encode()) + len(tailed.encode())
        if f"{job} " not in status and not any(line.split()[:1] == [job] for line in status.splitlines()):
            held = time.time()
            break
    rec = json.loads(cli(env, "status", job, "--json")[0])
    out.update(bytes=context, calls=calls, end_to_result=held - float(rec["ended_at"]), job=float(job))


def frontdesk_agent(env: dict[str, str], work: Path, seconds: float, out: dict[str, float]) -> None:
    sid = str(uuid.uuid4())
    aenv = {**env, "CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"}
    cmd = ["run", "--name", "fd-train", "--workdir", str(work), "--", PY, str(work / "train.py"), str(seconds)]
    text, _ = cli(aenv, *cmd)
    context = len(("frontdesk " + " ".join(cmd)).encode()) + len(text.encode())
    job = text.strip()
    payload = json.dumps(
        {
            "session_id": sid,
            "transcript_path": "/tmp/t.jsonl",
            "cwd": str(work),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    )
    answer, held = cli(
        aenv,
        "hook",
        "stop",
        "--harness",
        "claude-code",
        "--budget",
        str(seconds + 300),
        stdin=payload,
        timeout=seconds + 400,
    )
    reason = json.loads(answer)["reason"]
    context += len(reason.encode())
    rec = json.loads(cli(env, "status", job, "--json")[0])
    out.update(bytes=context, calls=1, end_to_result=held - float(rec["ended_at"]), report_bytes=len(reason.encode()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="job duration (default 120)")
    ap.add_argument("--poll", type=float, default=30.0, help="polling interval (default 30)")
    ap.add_argument("--tail-lines", type=int, default=20)
    ap.add_argument(
        "--phase",
        type=float,
        default=None,
        help="seconds before the first poll (default: random in [0, poll), as agents do other things first)",
    )
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    import random

    phase = args.phase if args.phase is not None else random.Random(args.seed).uniform(0, args.poll)
    home = Path(tempfile.mkdtemp(prefix="fd-bench-agent-"))
    work = home / "work"
    work.mkdir()
    (work / "train.py").write_text(JOB)
    proc, _client = start_gateway(home)
    env = {**os.environ, "FRONTDESK_HOME": str(home)}
    env.pop("FRONTDESK_SOCKET", None)
    for key in ("CLAUDE_CODE_SESSION_ID", "CLAUDECODE", "CODEX_THREAD_ID", "FRONTDESK_SESSION"):
        env.pop(key, None)
    try:
        polled: dict[str, float] = {}
        fd: dict[str, float] = {}
        threads = [
            threading.Thread(
                target=polling_agent, args=(env, work, args.seconds, args.poll, args.tail_lines, phase, polled)
            ),
            threading.Thread(target=frontdesk_agent, args=(env, work, args.seconds, fd)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(home, ignore_errors=True)
    print(
        f"agent loop: one {args.seconds:.0f} s job; polling every {args.poll:.0f} s "
        f"(status + tail -n {args.tail_lines}, first poll after {phase:.1f} s) vs one frontdesk report"
    )
    print(f"{'':24}{'bytes into context':>20}{'tool calls':>12}{'end->result':>14}")
    print(f"{'polling':24}{polled['bytes']:>20.0f}{polled['calls']:>12.0f}{polled['end_to_result']:>13.2f}s")
    print(f"{'frontdesk (Stop hook)':24}{fd['bytes']:>20.0f}{fd['calls']:>12.0f}{fd['end_to_result']:>13.2f}s")
    print(
        f"ratio polling/frontdesk: bytes x{polled['bytes'] / fd['bytes']:.1f}, "
        f"end->result x{polled['end_to_result'] / max(fd['end_to_result'], 1e-3):.1f} "
        f"(report itself: {fd['report_bytes']:.0f} bytes)"
    )
    print(
        f"polling end->result depends on where the job end falls between polls: {args.poll / 2:.0f} s on "
        f"average, up to {args.poll:.0f} s (plus the two calls); frontdesk's does not"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
