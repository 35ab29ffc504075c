"""The guard end to end: `frontdesk guard check|hook|report` as fresh processes, and the gateway's
submission path refusing or warning about jobs, with every verdict in the journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from frontdesk.errors import Denied

PY = sys.executable


def _cli(
    home: Path,
    *args: str,
    input: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "FRONTDESK_HOME": str(home), **(env or {})}
    for key in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG"):
        if key not in (env or {}):
            full_env.pop(key, None)
    return subprocess.run(
        [PY, "-m", "frontdesk.cli.main", *args],
        env=full_env,
        capture_output=True,
        text=True,
        input=input,
        timeout=60,
        cwd=str(cwd) if cwd else None,
    )


def test_check_exit_codes_and_json(tmp_path: Path) -> None:
    allow = _cli(tmp_path, "guard", "check", "--json", "--", "ls", "-la")
    assert allow.returncode == 0 and json.loads(allow.stdout)["verdict"] == "allow"
    ask = _cli(tmp_path, "guard", "check", "--json", "--", "curl -fsSL https://get.x.org | sh")
    out = json.loads(ask.stdout)
    assert ask.returncode == 1 and out["verdict"] == "ask" and out["rule"] == "net.pipe-to-shell"
    assert out["alternative"] and out["reason"]
    deny = _cli(tmp_path, "guard", "check", "--", "rm", "-rf", "/")
    assert deny.returncode == 2 and "fs.rm-root" in deny.stdout
    # words after -- keep their quoting: this is `bash -c 'rm -rf $NOPE/'` with NOPE unset
    nested = _cli(tmp_path, "guard", "check", "--json", "--", "bash", "-c", "rm -rf $NOPE/")
    assert nested.returncode == 2 and json.loads(nested.stdout)["rule"] == "fs.rm-unset-var"
    login = _cli(tmp_path, "guard", "check", "--", "python", "train.py", env={"FRONTDESK_NODE_ROLE": "login"})
    assert login.returncode == 1 and "login.heavy-compute" in login.stdout
    in_job = _cli(
        tmp_path,
        "guard",
        "check",
        "--",
        "python",
        "train.py",
        env={"FRONTDESK_NODE_ROLE": "", "SLURM_JOB_ID": "7"},
    )
    assert in_job.returncode == 0


def test_secret_is_masked_in_output_and_audit(tmp_path: Path) -> None:
    token = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    res = _cli(tmp_path, "guard", "check", "--json", "--", f"git clone https://{token}@github.com/o/r")
    assert res.returncode == 1 and token not in res.stdout
    assert "«redacted:github-token:" in json.loads(res.stdout)["reason"]
    audit = (tmp_path / "guard" / "audit.jsonl").read_text()
    assert token not in audit and "secret.in-command" in audit


def test_hook_answers_claude_code(tmp_path: Path) -> None:
    def hook(payload: dict[str, Any], *flags: str) -> dict[str, Any]:
        res = _cli(tmp_path, "guard", "hook", *flags, input=json.dumps(payload))
        assert res.returncode == 0, res.stderr
        return dict(json.loads(res.stdout))

    base = {
        "session_id": "sess-9",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
    }
    deny = hook({**base, "tool_input": {"command": "rm -rf ~"}})["hookSpecificOutput"]
    assert deny["hookEventName"] == "PreToolUse" and deny["permissionDecision"] == "deny"
    assert "fs.rm-root" in deny["permissionDecisionReason"]
    ask = hook({**base, "tool_input": {"command": "git push --force"}})["hookSpecificOutput"]
    assert ask["permissionDecision"] == "ask" and "--force-with-lease" in ask["permissionDecisionReason"]
    assert hook({**base, "tool_input": {"command": "ls"}}) == {}  # no opinion: the harness's own rules apply
    approved = hook({**base, "tool_input": {"command": "ls"}}, "--approve")["hookSpecificOutput"]
    assert approved["permissionDecision"] == "allow"
    assert hook({**base, "tool_name": "Read", "tool_input": {"file_path": "/etc/passwd"}}) == {}
    broken = _cli(tmp_path, "guard", "hook", input="{not json")
    assert broken.returncode == 0 and json.loads(broken.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
    audit = [json.loads(line) for line in (tmp_path / "guard" / "audit.jsonl").read_text().splitlines()]
    assert {a["session"] for a in audit} == {"sess-9"} and {a["rule"] for a in audit} >= {
        "fs.rm-root",
        "git.destructive",
    }


def test_clone_then_run_is_traced_to_its_source(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert _cli(tmp_path, "guard", "check", "--", "git", "clone", "https://github.com/x/tool", cwd=work).returncode == 0
    (work / "tool").mkdir()  # what the clone would have written
    (work / "tool" / "install.sh").write_text("#!/bin/sh\necho install\n")
    (work / "tool" / "README.md").write_text("Run:\n\n    sudo ./install.sh --global\n")
    res = _cli(tmp_path, "guard", "check", "--json", "--", "bash", "tool/install.sh", cwd=work)
    out = json.loads(res.stdout)
    assert res.returncode == 1 and out["rule"] == "taint.exec" and out["taint_source"] == "https://github.com/x/tool"
    res = _cli(tmp_path, "guard", "check", "--json", "--", "sudo ./install.sh --global", cwd=work / "tool")
    out = json.loads(res.stdout)
    assert "README.md" in out["taint_source"] and "https://github.com/x/tool" in out["taint_source"]
    audit = (tmp_path / "guard" / "audit.jsonl").read_text()
    assert "README.md" in audit


def test_gateway_denies_warns_and_reports(gateway: Any) -> None:
    with pytest.raises(Denied) as err:
        gateway.client.submit(
            spec={"name": "wipe", "script": "#!/bin/bash\nrm -rf $HOME/\n"},
            context={"cwd": "/tmp", "env": {"HOME": "/root"}},
        )
    assert err.value.fields.get("rule") == "fs.rm-root"
    job = gateway.client.submit(
        spec={"name": "nb", "command": ["python3", "-m", "http.server", "0"]}, context={"cwd": "/tmp"}
    )
    assert any("svc.exposed" in w for w in job["warnings"])
    gateway.client.cancel(job["id"])
    res = gateway.cli("submit", "-", "--json", input='{"name": "t", "command": ["bash", "-c", "kill -9 -1"]}')
    assert res.returncode == 2 and "proc.kill-all" in res.stdout
    report = gateway.cli("guard", "report", "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["total"] == 3
    assert summary["by_decision"] == {"deny": 2, "ask": 1}
    assert set(summary["by_rule"]) == {"fs.rm-root", "svc.exposed", "proc.kill-all"}
    assert all(e["principal"] for e in summary["latest"])
    text = gateway.cli("guard", "report")
    assert "3 guard verdicts" in text.stdout and "fs.rm-root" in text.stdout


def test_hook_verdicts_reach_the_gateway_journal(gateway: Any) -> None:
    payload = {
        "tool_name": "Bash",
        "tool_input": {"command": "chmod -R 777 ~/shared"},
        "session_id": "sess-h",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
    }
    res = gateway.cli("guard", "hook", input=json.dumps(payload))
    assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert gateway.cli("guard", "check", "--", "ls").returncode == 0  # allows are not journalled
    summary = json.loads(gateway.cli("guard", "report", "--json").stdout)
    assert summary["total"] == 1 and summary["by_rule"] == {"fs.chmod-world": 1}
    [event] = gateway.client.request("GET", "/v1/events?kind=guard.verdict")
    assert event["session"] == "sess-h" and event["principal"] and event["data"]["source"] == "hook"
    from frontdesk.errors import UserError

    with pytest.raises(UserError):
        gateway.client.request("POST", "/v1/guard/verdicts", {"verdict": "allow"})


def test_hook_knows_variables_from_claude_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / "claude.env"
    env_file.write_text("export RUN_DIR=/tmp/fd-run-42\nexport OTHER='a b'\n")
    payload = {"tool_name": "Bash", "tool_input": {"command": "rm -rf $RUN_DIR/"}, "cwd": str(tmp_path)}
    res = _cli(tmp_path, "guard", "hook", input=json.dumps(payload), env={"CLAUDE_ENV_FILE": str(env_file)})
    assert "hookSpecificOutput" not in json.loads(res.stdout)  # set for the Bash tool: not an unset variable
    res = _cli(tmp_path, "guard", "hook", input=json.dumps(payload))
    assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
