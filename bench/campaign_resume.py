"""What resuming a campaign hands the model, against replaying its transcript (issue 18).

Run: .venv/bin/python bench/campaign_resume.py [--steps 12]
One run, the real Claude Code binary (tests/harness/node) against the loopback Messages stand-in and a real
gateway: a campaign of N steps (each reads a source file with Bash, as an agent reading code does, and
submits a job that prints a 40-line log) is killed -9 mid-turn with the gateway; the jobs end while both
are down; the gateway restarts and `frontdesk sessions resume --headless` relaunches `claude --resume`.
Printed side by side: the handover frontdesk builds (the unread reports first, then the summary), the
transcript on disk, and the messages the model is sent on `claude --resume` (the transcript replayed plus
the handover). A fresh session that starts from the handover alone costs the first row; one that rebuilds
its context by replaying costs the third.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from anthropic_standin import MessagesStandIn  # noqa: E402

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable
CLAUDE = ROOT / "tests" / "harness" / "node" / "node_modules" / ".bin" / "claude"


def _until(check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.1)


def _script(steps: int) -> list[tuple[str, str]]:
    files = sorted((ROOT / "src" / "frontdesk").rglob("*.py"), key=lambda p: -p.stat().st_size)[:steps]
    out: list[tuple[str, str]] = []
    for i, path in enumerate(files):
        log = f'for e in $(seq 1 40); do echo "step {i} epoch $e loss 0.$((1000 - e))"; done'
        out += [("bash", f"cat {shlex.quote(str(path))}"), ("bash", f"frontdesk run --name step{i} -- sh -c '{log}'")]
    return [*out, ("bash", "sleep 600")]


def _campaign(env: dict[str, str], project: Path, steps: int) -> None:
    script = _script(steps)
    with MessagesStandIn(script) as api, open(project.parent / "claude.log", "wb") as log:
        argv = [str(CLAUDE), "-p", "run the campaign", "--allowedTools", "Bash", "--output-format", "json"]
        proc = subprocess.Popen(
            argv,
            cwd=project,
            env={**env, "ANTHROPIC_BASE_URL": api.url},
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        try:
            _until(lambda: len(api.loop_requests) >= len(script) or proc.poll() is not None, 600)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    if not CLAUDE.exists():
        raise SystemExit("install the pinned binary first: npm ci --prefix tests/harness/node")
    tmp = Path(tempfile.mkdtemp(prefix="fd-bench-camp-", dir="/tmp"))
    home, project = tmp / "fd", tmp / "proj"
    home.mkdir()
    project.mkdir()
    (home / "frontdesk.toml").write_text(f'[agents]\nchannels = ["hooks"]\nclaude_bin = "{CLAUDE}"\n')
    (home / "frontdesk.toml").chmod(0o600)
    env = {
        **os.environ,
        "FRONTDESK_HOME": str(home),
        "FRONTDESK_NO_AUTOSTART": "1",
        "ANTHROPIC_API_KEY": "sk-test",
        "HOME": str(tmp / "home"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for key in ("CLAUDE_CODE_SESSION_ID", "CLAUDECODE", "FRONTDESK_SESSION", "FRONTDESK_SOCKET"):
        env.pop(key, None)
    proc, client = start_gateway(home)
    try:
        subprocess.run([PY, "-m", "frontdesk.cli.main", "hooks", "install", "claude", "--dir", str(project),
                        "--no-guard"], env=env, check=True, capture_output=True)  # fmt: skip
        _campaign(env, project, args.steps)
        proc.send_signal(signal.SIGKILL)  # the node goes down: harness and gateway
        proc.wait()
        proc, client = start_gateway(home)
        sid = client.request("GET", "/v1/sessions")[0]["id"]
        camp = lambda: client.request("GET", f"/v1/sessions/{sid}/campaign")  # noqa: E731
        _until(lambda: len(camp()["unread"]) == args.steps, 120)
        transcript = Path(camp()["transcript_path"]).stat().st_size
        dry = subprocess.run(
            [PY, "-m", "frontdesk.cli.main", "sessions", "resume", sid, "--headless", "--dry-run", "--json"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        handover = len(json.loads(dry.stdout)["prompt"].encode())
        with MessagesStandIn([("text", "Carrying on.")], first_id=1000) as api:
            res = subprocess.run(
                [PY, "-m", "frontdesk.cli.main", "sessions", "resume", sid, "--headless"],
                env={**env, "ANTHROPIC_BASE_URL": api.url}, cwd=project, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
        if res.returncode != 0:
            raise SystemExit(res.stderr[-2000:])
        sent = len(json.dumps(api.loop_requests[0]["messages"]).encode())
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"campaign of {args.steps} steps (a file read + a job each), killed -9 mid-turn; {args.steps} reports unread")
    print(f"  {'':52}{'bytes':>10}{'x handover':>12}")
    rows = [
        ("handover: reports first + summary (fresh start)", handover),
        ("transcript on disk (JSONL)", transcript),
        ("claude --resume: messages sent (replay + handover)", sent),
    ]
    for name, size in rows:
        print(f"  {name:52}{size:>10,}{size / handover:>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
