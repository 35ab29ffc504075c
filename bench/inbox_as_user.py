"""What writing a session's inbox as its user costs a root gateway (issue 13): in-process vs a dropped child.

Run (as root): .venv/bin/python bench/inbox_as_user.py [--deliveries 30] [--user fdh6a]
Side by side in one run: the per-user path (the gateway is the session's user: connect, checks, write in
process) against the facility path (a `python -P -m frontdesk.agents.channels.inbox_send` child that drops to
the user, then checks, connects and writes). Each delivery is the real InboxChannel.deliver to a listener that
reads the message and closes; prints p50/p99 in ms and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.agents.channels.inbox import InboxChannel  # noqa: E402
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState  # noqa: E402

LISTENER = """
import os, socket, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o600); srv.listen(64)
print("ready", flush=True)
while True:
    c, _ = srv.accept()
    while c.recv(65536):
        pass
    c.close()
"""


def _listener(user: str, path: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", LISTENER, str(path)]
    if user != "root":
        argv = ["runuser", "-u", user, "--", "/usr/bin/python3", "-c", LISTENER, str(path)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _run(user: str, n: int) -> list[float]:
    d = Path(tempfile.mkdtemp(prefix="fdbench-inbox-", dir="/tmp"))
    shutil.chown(d, user, user)
    d.chmod(0o700)
    proc = _listener(user, d / "inbox.sock")
    home = Path(tempfile.mkdtemp(prefix="fdbench-home-"))
    times = []
    try:
        for i in range(n):
            ch = InboxChannel(AgentSettings(), home=home)
            sid = f"bench-{i}"
            ctx = {"inbox_socket": str(d / "inbox.sock"), "inbox_token": "t" * 32, "agent_pid": os.getpid()}
            ch.capture(sid, user, ctx, {})
            session = Session(
                id=sid, user=user, harness=Harness.CLAUDE_CODE, reach={"pid": os.getpid()}, turn_state=TurnState.IDLE
            )
            t0 = time.perf_counter()
            ok = asyncio.run(ch.deliver(session, "[frontdesk] job 1 ended", [1]))
            times.append((time.perf_counter() - t0) * 1000)
            assert ok, "not delivered"
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return times


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--deliveries", type=int, default=30)
    p.add_argument("--user", default="fdh6a")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.stderr.write("run as root\n")
        return 2
    pwd.getpwnam(args.user)
    rows = [
        ("in process (per-user)", _run("root", args.deliveries)),
        ("dropped child (facility)", _run(args.user, args.deliveries)),
    ]
    base = statistics.median(rows[0][1])
    for name, t in rows:
        p50, p99 = statistics.median(t), sorted(t)[max(0, int(len(t) * 0.99) - 1)]
        print(f"{name:26s} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  x{p50 / base:5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
