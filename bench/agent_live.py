"""Time from a job's end to the model holding its report: live inbox vs headless resume, one run.

The real Claude Code (pinned, from tests/harness/node) runs interactively under tmux against the scripted
stand-in API; each wake's reply submits the next job from the Bash tool, so the session sits idle at its
prompt between jobs. Then the harness is killed and one more job ends: the report goes out by headless
resume (`claude -p --resume`). Printed: per channel, the seconds from the job's `ended_at` to the
request that carries its report, and the size of the text that entered the context.

    .venv/bin/python bench/agent_live.py [--jobs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "harness"))

from live.claude_tmux import API_KEY, ClaudeInTmux, claude_bin, ensure_claude  # noqa: E402
from live.standin import Rule, StandIn  # noqa: E402

from conftest import GatewayProc  # noqa: E402
from frontdesk.agents.install import claude_entries  # noqa: E402

FRONTDESK = str(Path(sys.executable).parent / "frontdesk")


def _job(i: int) -> str:
    return f"{FRONTDESK} run --name b{i} -- sh -c 'sleep 2; echo bench-result-{i}' && echo SUBMITTED-{i}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=3)
    args = ap.parse_args()
    why = ensure_claude()
    if why:
        print(f"skipped: {why}")
        return 0
    root = Path(tempfile.mkdtemp(prefix="fd-bench-", dir="/tmp"))
    api = StandIn().start()
    cc = ClaudeInTmux(root / "cc", api.url)
    (root / "gw").mkdir()
    gw = GatewayProc(
        root / "gw",
        config=f'[agents]\nallow_headless = true\nclaude_bin = "{claude_bin()}"\n',
        env={
            "FRONTDESK_PLUGINS": "agents",
            "HOME": str(cc.home),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
    )
    gw.start()
    n = args.jobs
    api.rules[:] = [Rule(match="GO", bash=_job(1))] + [
        Rule(match=f"bench-result-{i}", bash=_job(i + 1)) for i in range(1, n)
    ]
    hooks = {e: g for e, g in claude_entries().items() if e in ("SessionStart", "UserPromptSubmit", "Stop")}
    for groups in hooks.values():
        for group in groups:
            group["hooks"] = [h for h in group["hooks"] if not h.get("async")]
    cc.env = {"FRONTDESK_HOME": str(gw.home), "PATH": f"{Path(FRONTDESK).parent}:{os.environ['PATH']}"}
    cc.prepare({"permissions": {"allow": ["Bash"]}, "hooks": hooks})
    rows: dict[str, list[tuple[float, int]]] = {"live inbox": [], "headless resume": []}
    try:
        cc.start("--allowedTools", "Bash", "--permission-mode", "default")
        cc.wait_screen("❯", 30)
        cc.type("GO")
        for i in range(1, n + 1):
            seen = api.wait_for(lambda r, i=i: f"bench-result-{i}" in r.last_user_text, 60)
            job = next(j for j in gw.client.request("GET", "/v1/jobs") if j["name"] == f"b{i}")
            rows["live inbox"].append((seen.at - float(job["ended_at"]), len(seen.last_user_text.encode())))
        time.sleep(2)
        sid = gw.client.request("GET", "/v1/sessions")[0]["id"]
        pid = int(gw.client.request("GET", f"/v1/sessions/{sid}")["reach"]["pid"])
        os.kill(pid, 9)
        res = gw.cli(
            "run",
            "--json",
            "--name",
            "bh",
            "--",
            "sh",
            "-c",
            "sleep 2; echo bench-result-h",
            env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"},
        )
        assert res.returncode == 0, res.stderr
        seen = api.wait_for(lambda r: "bench-result-h" in r.last_user_text, 90)
        job = next(j for j in gw.client.request("GET", "/v1/jobs") if j["name"] == "bh")
        rows["headless resume"].append((seen.at - float(job["ended_at"]), len(seen.last_user_text.encode())))
    finally:
        cc.stop()
        gw.stop()
        api.stop()
    print(f"Claude Code 2.1.332, stand-in API: {n} live-inbox wakes, then 1 headless resume")
    print(f"{'channel':<16} {'n':>2} {'median s':>9} {'max s':>7} {'bytes in context':>17}")
    for name, vals in rows.items():
        if vals:
            lat = [v[0] for v in vals]
            print(
                f"{name:<16} {len(vals):>2} {statistics.median(lat):>9.2f} {max(lat):>7.2f} "
                f"{int(statistics.median(v[1] for v in vals)):>17}"
            )
    inbox, head = rows["live inbox"], rows["headless resume"]
    if inbox and head:
        ratio = statistics.median(v[0] for v in head) / max(statistics.median(v[0] for v in inbox), 1e-3)
        print(f"headless resume / live inbox latency: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
