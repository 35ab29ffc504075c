"""`frontdesk guard check|hook` as fresh processes: bad input has its own exit code (never 2, a deny), the hook
says once that the node role is unknown, and a guard check never starts a gateway. Canaries only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leftovers import stop_process

PY = sys.executable
BAD_INPUT, BAD_CONFIG = 64, 78


def _run(
    home: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "FRONTDESK_HOME": str(home), **(env or {})}
    for key in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG", "FRONTDESK_URL", "FRONTDESK_SOCKET"):
        if key not in (env or {}):
            full.pop(key, None)
    return subprocess.run(
        [PY, "-m", "frontdesk.cli.main", *args], env=full, capture_output=True, text=True, input=input, timeout=60
    )


@pytest.mark.parametrize(
    "args",
    [
        ("guard", "check", "--", ""),
        ("guard", "check", "--", "   "),
        ("guard", "check", "--role", "moon", "--", "ls"),
        ("guard", "check", "--json", "--"),
    ],
)
def test_bad_input_has_its_own_exit_code_and_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    res = _run(tmp_path, *args)
    assert res.returncode == BAD_INPUT, res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("frontdesk: ") and "Traceback" not in res.stderr


def test_a_usage_error_of_guard_check_is_not_a_deny(tmp_path: Path) -> None:
    res = _run(tmp_path, "guard", "check")
    assert res.returncode == BAD_INPUT and res.stderr.startswith("frontdesk: ")
    res = _run(tmp_path, "guard", "check", "--bogus", "ls")
    assert res.returncode == BAD_INPUT and "--bogus" in res.stderr and res.stderr.count("\n") == 1
    fast = subprocess.run(
        [PY, "-m", "frontdesk.cli.guard", "check", "--bogus", "ls"], capture_output=True, text=True, timeout=60
    )
    assert fast.returncode == BAD_INPUT


def test_a_bad_guard_config_exits_78(tmp_path: Path) -> None:
    (tmp_path / "frontdesk.toml").write_text('[guard]\ngpus_managed = "yes"\n')
    res = _run(tmp_path, "guard", "check", "--", "ls")
    assert res.returncode == BAD_CONFIG and "gpus_managed" in res.stderr


def test_verdict_exit_codes_are_unchanged(tmp_path: Path) -> None:
    assert _run(tmp_path, "guard", "check", "--", "ls").returncode == 0
    assert _run(tmp_path, "guard", "check", "--", "git restore src/a.py").returncode == 1
    deny = _run(tmp_path, "guard", "check", "--json", "--", "rm -rf 2>/dev/null ~")
    assert deny.returncode == 2 and json.loads(deny.stdout)["rule"] == "fs.rm-root"


def test_a_guard_check_never_starts_a_gateway(tmp_path: Path) -> None:
    res = _run(tmp_path, "guard", "check", "--", "bash <<< 'rm -rf ~'")
    assert res.returncode == 2
    assert "started your gateway" not in res.stderr
    assert not list(tmp_path.glob("**/*.sock")) and not (tmp_path / "gateway.log").exists()


def test_the_hook_says_once_that_the_node_role_is_unknown(tmp_path: Path) -> None:
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": str(tmp_path)})
    first = json.loads(_run(tmp_path, "guard", "hook", input=payload).stdout)
    assert "node role is not set" in first["systemMessage"] and "hookSpecificOutput" not in first
    assert json.loads(_run(tmp_path, "guard", "hook", input=payload).stdout) == {}
    other = tmp_path / "other"
    other.mkdir()
    told = json.loads(_run(other, "guard", "hook", input=payload, env={"FRONTDESK_NODE_ROLE": "login"}).stdout)
    assert "systemMessage" not in told
    in_job = json.loads(_run(other, "guard", "hook", input=payload, env={"SLURM_JOB_ID": "7"}).stdout)
    assert "systemMessage" not in in_job


def test_the_hook_stops_a_redirect_bypass_and_a_heredoc(tmp_path: Path) -> None:
    for command in ("rm -rf 2>/dev/null ~", "bash <<EOF\nrm -rf ~\nEOF\n", "srun --time 10 rm -rf ~"):
        payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(tmp_path)})
        out = json.loads(_run(tmp_path, "guard", "hook", input=payload, env={"FRONTDESK_NODE_ROLE": "login"}).stdout)
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny", command


def test_killing_a_frontdesk_job_process_is_denied(tmp_path: Path) -> None:
    """A canary `sleep` carrying the tag every job process carries; the guard only reads /proc, never kills."""
    env = {**os.environ, "FRONTDESK_ATTEMPT_TAG": "test-j77.1", "FRONTDESK_JOB_ID": "j77"}
    job = subprocess.Popen(["sleep", "60"], env=env)
    plain = subprocess.Popen(["sleep", "60"])
    try:
        res = _run(tmp_path, "guard", "check", "--json", "--", f"kill -9 {job.pid}")
        out = json.loads(res.stdout)
        assert res.returncode == 2 and out["rule"] == "proc.kill-job" and "j77" in out["reason"]
        assert "frontdesk cancel" in out["alternative"]
        assert _run(tmp_path, "guard", "check", "--", f"kill {plain.pid}").returncode == 0
        same_job = _run(
            tmp_path, "guard", "check", "--", f"kill {job.pid}", env={"FRONTDESK_ATTEMPT_TAG": "test-j77.1"}
        )
        assert same_job.returncode == 0  # the job's own session may stop its own processes
    finally:
        for proc in (job, plain):
            stop_process(proc)
