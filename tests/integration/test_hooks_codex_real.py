"""The real Codex binary (npm @openai/codex 0.171.0, pinned in tests/harness/node/package.json), headless
against a loopback stand-in of the Responses API, with the hooks `frontdesk hooks install codex` wrote:
the Stop hook holds the turn while the session's job runs and the report reaches the model next.

Codex has no tool call in this stand-in, so an extra SessionStart hook plays "the agent submitted a
job in this turn" (it runs `frontdesk run` with the thread id Codex passes on stdin).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
sys.path.insert(0, str(HARNESS))

from live.responses_standin import ResponsesStandIn, input_text  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]


@pytest.fixture
def codex_env() -> Iterator[tuple[dict[str, str], ResponsesStandIn, Path]]:
    api = ResponsesStandIn().start()
    root = Path(tempfile.mkdtemp(prefix="fd-cx-", dir="/var/tmp"))
    (root / "home" / ".codex").mkdir(parents=True)
    (root / "project").mkdir()
    (root / "home" / ".codex" / "config.toml").write_text(
        f'model = "gpt-standin"\nmodel_provider = "standin"\n[model_providers.standin]\nname = "standin"\n'
        f'base_url = "{api.url}"\nwire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n'
    )
    env = {"HOME": str(root / "home"), "CODEX_HOME": str(root / "home" / ".codex"), "STANDIN_API_KEY": "k"}
    yield env, api, root / "project"
    api.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_codex_stop_hook_brings_the_report_to_the_model(gateway_factory: Any, codex_bin: Path, codex_env: Any) -> None:
    env, api, project = codex_env
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\n")
    res = gw.cli("hooks", "install", "codex", "--project", "--dir", str(project))
    assert res.returncode == 0, res.stderr
    marker = f"codex-{uuid.uuid4().hex[:8]}"
    submit = (
        f'{sys.executable} -c "import json, os, subprocess, sys; '
        f"sid = json.load(sys.stdin)['session_id']; "
        f"subprocess.run([sys.executable, '-m', 'frontdesk.cli.main', 'run', '--name', 'cx', '--', 'sh', "
        f"'-c', 'sleep 2; echo {marker}'], env={{**os.environ, 'FRONTDESK_SESSION': sid}}, "
        f'capture_output=True)"'
    )
    hooks_file = project / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    hooks["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": submit, "timeout": 60}]})
    hooks_file.write_text(json.dumps(hooks, indent=2))
    run = subprocess.run(
        [
            str(codex_bin),
            "exec",
            "--trust",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            "--json",
            "train it",
        ],
        cwd=project,
        env={**gw.env, **env},
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    bodies = [body for _, body in api.seen]
    assert len(bodies) == 2, [input_text(b)[-200:] for b in bodies]
    assert marker not in input_text(bodies[0])
    after_stop = input_text(bodies[1])
    assert "[frontdesk] job you submitted ended:" in after_stop and "(cx) COMPLETED" in after_stop
    assert marker in after_stop
    thread = next(
        json.loads(line)["thread_id"]
        for line in run.stdout.splitlines()
        if line.startswith("{") and json.loads(line).get("type") == "thread.started"
    )
    s = gw.client.request("GET", f"/v1/sessions/{thread}")
    assert s["harness"] == "codex" and s["unread"] == 0 and s["last_channel"] == "hooks:Stop"
    assert os.path.exists(hooks_file)


def test_untrusted_hooks_are_skipped_by_the_real_codex_and_doctor_says_why(
    gateway_factory: Any, codex_bin: Path, codex_env: Any
) -> None:
    """Issue 19, defect 5: without a reviewed hook trust, the real `codex exec` runs no frontdesk hook at all
    (the report would wait forever); `frontdesk doctor` names exactly that and how to fix it."""
    env, api, project = codex_env
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\n")
    res = gw.cli("hooks", "install", "codex", "--project", "--dir", str(project))
    assert res.returncode == 0, res.stderr
    ran = project / "hook-ran"
    hooks_file = project / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    probe = f"{sys.executable} -c \"open('{ran}', 'w').write('x')\""
    hooks["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": probe, "timeout": 60}]})
    hooks_file.write_text(json.dumps(hooks, indent=2))
    argv = [str(codex_bin), "exec", "--trust", "--skip-git-repo-check", "--sandbox", "danger-full-access", "hi"]
    run = subprocess.run(
        argv, cwd=project, env={**gw.env, **env}, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not ran.exists()  # the hook was never run: Codex skips hooks nobody reviewed, silently
    doctor = gw.cli("doctor", "--dir", str(project), "--json", env=env)
    checks = {(c["harness"], c["check"]): c for c in json.loads(doctor.stdout)["checks"]}
    reviewed = checks[("codex", "hooks-reviewed")]
    assert reviewed["ok"] is not True and "/hooks" in reviewed["fix"]
    with_bypass = subprocess.run(
        [*argv[:2], "--dangerously-bypass-hook-trust", *argv[2:]], cwd=project, env={**gw.env, **env},
        capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert with_bypass.returncode == 0 and ran.exists()  # the same hooks run once trusted (here: bypassed)
