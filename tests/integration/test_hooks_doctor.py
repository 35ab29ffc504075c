"""`frontdesk doctor` for a correctly and an incorrectly set-up Claude Code and Codex (issue 19, defect 5),
with the real binaries on PATH and a real login shell; the output is pinned in tests/golden/agents."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

NODE_BIN = Path(__file__).resolve().parents[1] / "harness" / "node" / "node_modules" / ".bin"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "agents"
pytestmark = [pytest.mark.harness, pytest.mark.usefixtures("harness_node")]  # the real binaries, installed if missing


def _doctor(gw: Any, project: Path, env: dict[str, str]) -> tuple[int, str, dict[str, Any]]:
    text = gw.cli("doctor", "--dir", str(project), env=env)
    data = gw.cli("doctor", "--json", "--dir", str(project), env=env)
    return text.returncode, text.stdout, json.loads(data.stdout)


def _golden(name: str, text: str, tmp: Path, gw: Any) -> None:
    text = (
        text.replace(str(gw.home), "<GATEWAY_HOME>")
        .replace(str(tmp), "<TMP>")
        .replace(str(Path(sys.executable).parent), "<VENV>/bin")
    )
    text = text.replace(str(NODE_BIN), "<NODE>/.bin")
    path = GOLDEN / name
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def _home(tmp_path: Path, login_finds_frontdesk: bool) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    if login_finds_frontdesk:  # what `doctor` suggests: ~/.local/bin, which ~/.profile puts on a login PATH
        (home / ".local" / "bin").mkdir(parents=True)
        (home / ".local" / "bin" / "frontdesk").symlink_to(Path(sys.executable).parent / "frontdesk")
        (home / ".profile").write_text('PATH="$HOME/.local/bin:$PATH"\n')
    path = f"{NODE_BIN}:{Path(sys.executable).parent}:/usr/bin:/bin"
    return {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "PATH": path, "SHELL": "/bin/bash"}


def test_doctor_on_a_correct_setup(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    env = _home(tmp_path, login_finds_frontdesk=True)
    project = tmp_path / "project"
    project.mkdir()
    (Path(env["HOME"]) / ".gemini").mkdir()
    (Path(env["HOME"]) / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    for harness in ("claude", "codex", "gemini"):
        assert gw.cli("hooks", "install", harness, "--project", "--dir", str(project), env=env).returncode == 0
    cfg = Path(env["CODEX_HOME"]) / "config.toml"  # what Codex writes once the project and hooks are trusted
    cfg.write_text(
        f'[projects."{project}"]\ntrust_level = "trusted"\n\n'
        f'[hooks.state."{project}/.codex/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:0"\n'
    )
    code, text, data = _doctor(gw, project, env)
    assert code == 0 and data["ok"] is True, text
    bad = [c for c in data["checks"] if c["ok"] is False]
    assert bad == []
    assert {(c["harness"], c["check"]) for c in data["checks"] if c["ok"]} >= {
        ("frontdesk", "gateway"),
        ("claude", "hooks"),
        ("claude", "hooks-resolve"),
        ("codex", "hooks"),
        ("codex", "trust"),
        ("codex", "hooks-reviewed"),
        ("codex", "login-path"),
        ("gemini", "hooks"),
        ("gemini", "trust"),
    }
    _golden("doctor_ok.txt", text, tmp_path, gw)


def test_doctor_on_a_broken_setup(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    env = _home(tmp_path, login_finds_frontdesk=False)
    project = tmp_path / "project"
    (project / ".codex").mkdir(parents=True)
    pinned = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/gone/venv/bin/frontdesk hook stop"}]}]}}
    (project / ".codex" / "hooks.json").write_text(json.dumps(pinned))  # copied from another machine
    env["FRONTDESK_SOCKET"] = str(tmp_path / "no-gateway.sock")  # nothing listens; autostart does not apply
    code, text, data = _doctor(gw, project, env)
    assert code == 1 and data["ok"] is False
    failed = {(c["harness"], c["check"]) for c in data["checks"] if c["ok"] is False}
    assert failed == {
        ("frontdesk", "gateway"),
        ("claude", "hooks"),
        ("gemini", "hooks"),
        ("codex", "hooks-resolve"),
        ("codex", "trust"),
        ("codex", "login-path"),
    }
    assert all(c["fix"] for c in data["checks"] if c["ok"] is False)
    _golden("doctor_broken.txt", text, tmp_path, gw)
