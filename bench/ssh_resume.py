"""What the ssh hop adds to `frontdesk sessions resume` (issue 18, `--on HOST`).

Run: .venv/bin/python bench/ssh_resume.py [--runs 10]   (as root: it starts a private sshd, tests/harness/sshd_lab.py)
One run, a real gateway and a private sshd on 127.0.0.1 standing in for another login node. The campaign's
harness is `true` (`[agents] claude_bin`), so each resume is the whole path up to the harness and back: the
plan asked of the gateway, the resume recorded, the harness exec'd and ended. Printed side by side: the
resume run here and the same resume run through `--on 127.0.0.1` (BatchMode ssh, key login, the remote
frontdesk), median and p90 wall times of N runs each, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from sshd_lab import PrivateSshd  # noqa: E402

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable


def _time(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        res = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        out.append(time.perf_counter() - t0)
        if res.returncode != 0:
            raise SystemExit(f"{argv[-4:]} failed ({res.returncode}): {res.stderr[-500:]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-bench-ssh-"))
    (home / "frontdesk.toml").write_text('[agents]\nchannels = ["hooks"]\nclaude_bin = "true"\n')
    env = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    proc, client = start_gateway(home, {"FRONTDESK_CONFIG": str(home / "frontdesk.toml")})
    project = home / "proj"
    project.mkdir()
    client.request("POST", "/v1/sessions", {"session": "bench-1", "harness": "claude-code", "cwd": str(project)})
    remote_env = {k: env[k] for k in ("FRONTDESK_HOME", "FRONTDESK_NO_AUTOSTART", "PYTHONPATH") if k in env}
    sshd = PrivateSshd({**remote_env, "PATH": f"{Path(PY).parent}:/usr/bin:/bin"})
    try:
        base = [PY, "-m", "frontdesk.cli.main", "sessions", "resume", "bench-1", "--headless"]
        here = _time(base, env, args.runs)
        there = _time([*base, "--on", "127.0.0.1"], {**env, "FRONTDESK_SSH": sshd.ssh}, args.runs)
    finally:
        sshd.stop()
        proc.terminate()
        proc.wait()
    print(f"sessions resume (harness `true`), {args.runs} runs each, wall time")
    print(f"{'':24}{'median':>10}{'p90':>10}")
    for name, xs in (("here", here), ("--on 127.0.0.1 (ssh)", there)):
        p90 = sorted(xs)[max(0, int(len(xs) * 0.9) - 1)]
        print(f"{name:24}{statistics.median(xs) * 1000:>8.0f}ms{p90 * 1000:>8.0f}ms")
    print(f"ratio ssh/here (median): {statistics.median(there) / statistics.median(here):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
