"""`hooks install/uninstall`: merge beside existing hooks, idempotent, byte-for-byte undo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontdesk.agents import install as inst

EXE = "/opt/fd env/bin/python"  # a path with a space: the command must quote it

EXISTING = """{
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "afplay done.wav"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
    },
    "model": "opus"
}
"""


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTDESK_HOME", str(tmp_path / "fdhome"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))


def test_claude_entries_pin_the_documented_shapes() -> None:
    e = inst.claude_entries(inst.HookPlan(stop_timeout=900, rewake_timeout=86400), exe=EXE)
    assert set(e) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "PreToolUse", "PostToolUse"}
    assert e["PostToolUse"] == [
        {
            "matcher": "TodoWrite",
            "hooks": [
                {
                    "type": "command",
                    "timeout": 30,
                    "command": "'/opt/fd env/bin/python' -m frontdesk.agents.hooks plan --harness claude-code",
                }
            ],
        },
        {
            "matcher": "Bash",
            "hooks": [
                {"type": "command", "timeout": 30, "command": "'/opt/fd env/bin/python' -m frontdesk.storage.hint"}
            ],
        },
    ]
    assert e["PreToolUse"] == [
        {
            "matcher": "Bash",
            "hooks": [
                {"type": "command", "timeout": 30, "command": "'/opt/fd env/bin/python' -m frontdesk.cli.guard hook"}
            ],
        }
    ]
    assert "PreToolUse" not in inst.claude_entries(inst.HookPlan(guard=False), exe=EXE)
    stop, rewake = e["Stop"][0]["hooks"]
    assert stop == {
        "type": "command",
        "timeout": 900,
        "command": "'/opt/fd env/bin/python' -m frontdesk.agents.hooks stop --harness claude-code --budget 880",
    }
    assert rewake == {
        "type": "command",
        "timeout": 86400,
        "async": True,
        "asyncRewake": True,
        "command": "'/opt/fd env/bin/python' -m frontdesk.agents.hooks rewake --harness claude-code --budget 86380",
    }
    assert e["SessionStart"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "timeout": 30,
                    "command": "'/opt/fd env/bin/python' -m frontdesk.agents.hooks session-start --harness claude-code",
                }
            ]
        }
    ]


def test_codex_entries_have_no_async_rewake() -> None:
    e = inst.codex_entries(exe=EXE)
    assert set(e) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert all("async" not in h for groups in e.values() for g in groups for h in g["hooks"])
    stop = e["Stop"][0]["hooks"][0]["command"]
    assert stop.endswith("frontdesk.agents.hooks stop --harness codex --budget 880")


def test_merge_keeps_other_hooks_and_is_idempotent() -> None:
    current = json.loads(EXISTING)
    once = inst.merge_hooks(current, inst.claude_entries(exe=EXE))
    twice = inst.merge_hooks(once, inst.claude_entries(exe="/elsewhere/python3"))
    for merged in (once, twice):
        assert merged["permissions"] == current["permissions"] and merged["model"] == "opus"
        assert merged["hooks"]["Stop"][0] == current["hooks"]["Stop"][0]
        assert merged["hooks"]["PreToolUse"][0] == current["hooks"]["PreToolUse"][0]
        assert len(merged["hooks"]["Stop"]) == 2 and len(merged["hooks"]["PreToolUse"]) == 2
    assert inst.unmerge_hooks(twice) == current


def test_our_commands_are_recognised_and_others_are_not() -> None:
    assert inst.is_ours({"command": "'/x y/frontdesk' hook stop --harness codex"})
    assert inst.is_ours({"command": "frontdesk hook rewake"})
    assert inst.is_ours({"command": "/v/bin/python -m frontdesk.agents.hooks stop --harness claude-code"})
    assert inst.is_ours({"command": "/v/bin/python -m frontdesk.cli.guard hook"})
    assert inst.is_ours({"command": "frontdesk guard hook --approve"})
    assert not inst.is_ours({"command": "echo frontdesk is great; hooky"})
    assert not inst.is_ours({"command": "./guard.sh"})


@pytest.mark.parametrize("harness,rel", [("claude", ".claude/settings.json"), ("codex", ".codex/hooks.json")])
def test_install_then_uninstall_restores_byte_for_byte(tmp_path: Path, harness: str, rel: str) -> None:
    proj = tmp_path / "proj"
    target = proj / rel
    target.parent.mkdir(parents=True)
    target.write_bytes(EXISTING.encode())  # 4-space indent, odd layout: install reformats, undo must not
    inst.install(harness, "project", proj, exe=EXE)
    merged = json.loads(target.read_text())
    assert any(inst.is_ours(h) for g in merged["hooks"]["Stop"] for h in g["hooks"])
    assert merged["hooks"]["PreToolUse"][0] == json.loads(EXISTING)["hooks"]["PreToolUse"][0]
    inst.install(harness, "project", proj, exe=EXE)  # twice: still one set, first original kept
    inst.uninstall(harness, "project", proj)
    assert target.read_bytes() == EXISTING.encode()


def test_install_into_nothing_and_uninstall_leaves_nothing(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    msgs = inst.install("claude", "project", proj, exe=EXE)
    assert (proj / ".claude" / "settings.json").exists() and "installed" in msgs[0]
    inst.uninstall("claude", "project", proj)
    assert list(proj.iterdir()) == []


def test_uninstall_after_user_edits_removes_only_ours(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    (proj / ".claude").mkdir(parents=True)
    target = proj / ".claude" / "settings.json"
    target.write_text(EXISTING)
    inst.install("claude", "project", proj, exe=EXE)
    data = json.loads(target.read_text())
    data["env"] = {"FOO": "1"}  # the user edits the file after install
    target.write_text(json.dumps(data))
    msgs = inst.uninstall("claude", "project", proj)
    assert "changed since install" in msgs[0]
    after = json.loads(target.read_text())
    assert after == {**json.loads(EXISTING), "env": {"FOO": "1"}}


def test_codex_notify_is_added_at_top_level_and_removed(tmp_path: Path) -> None:
    cfg = tmp_path / "home" / ".codex" / "config.toml"  # CODEX_HOME: Codex reads notify only there
    cfg.parent.mkdir(parents=True)
    original = 'model = "o4"\n\n[features]\nhooks = true\n'
    cfg.write_text(original)
    inst.install("codex", "user", exe=EXE)
    import tomllib

    parsed = tomllib.loads(cfg.read_text())
    assert parsed["notify"] == [EXE, "-m", "frontdesk.agents.hooks", "notify", "--harness", "codex"]
    assert parsed["features"] == {"hooks": True} and parsed["model"] == "o4"
    inst.uninstall("codex", "user")
    assert cfg.read_text() == original


def test_codex_project_install_leaves_config_toml_alone(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    msgs = inst.install("codex", "project", proj, exe=EXE)
    assert not (proj / ".codex" / "config.toml").exists()
    assert "--user" in msgs[1] and any("next (trust)" in m and "trust_level" in m for m in msgs[2:])
    assert any("next (hooks-reviewed)" in m and "/hooks" in m for m in msgs[2:])


def test_codex_existing_notify_is_left_alone(tmp_path: Path) -> None:
    cfg = tmp_path / "home" / ".codex" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('notify = ["notify-send"]\n')
    msgs = inst.install("codex", "user", exe=EXE)
    assert "already set" in msgs[1]
    assert cfg.read_text() == 'notify = ["notify-send"]\n'


def test_user_scope_uses_home_and_codex_home(tmp_path: Path) -> None:
    assert inst.target_paths("claude", "user")["hooks"] == tmp_path / "home" / ".claude" / "settings.json"
    assert inst.target_paths("codex", "user")["hooks"] == tmp_path / "home" / ".codex" / "hooks.json"


def test_broken_settings_are_refused_not_clobbered(tmp_path: Path) -> None:
    from frontdesk.errors import ConfigError

    proj = tmp_path / "p"
    (proj / ".claude").mkdir(parents=True)
    (proj / ".claude" / "settings.json").write_text("{ not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        inst.install("claude", "project", proj, exe=EXE)
    assert (proj / ".claude" / "settings.json").read_text() == "{ not json"


def _commands(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    return [h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]]


@pytest.mark.parametrize("harness,rel", [("claude", ".claude/settings.json"), ("codex", ".codex/hooks.json")])
def test_project_hooks_name_no_path_of_this_machine(tmp_path: Path, harness: str, rel: str) -> None:
    import sys

    inst.install(harness, "project", tmp_path)
    cmds = _commands(tmp_path / rel)
    assert cmds and all(c.startswith("command -v frontdesk >/dev/null 2>&1 || exit 0; exec frontdesk ") for c in cmds)
    assert not any(sys.prefix in c for c in cmds)
    assert all(inst.is_ours({"command": c}) for c in cmds)
    inst.uninstall(harness, "project", tmp_path)
    assert not (tmp_path / rel).exists()


def test_user_hooks_pin_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("HOME", str(tmp_path))
    inst.install("claude", "user")
    assert all(c.startswith(sys.executable) for c in _commands(tmp_path / ".claude" / "settings.json"))


def test_a_portable_hook_is_silent_without_frontdesk_and_runs_it_with(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    inst.install("claude", "project", tmp_path)
    stop = next(c for c in _commands(tmp_path / ".claude" / "settings.json") if " hook stop " in c)
    bare = subprocess.run(["sh", "-c", stop], env={"PATH": "/usr/bin:/bin"}, input="{}", capture_output=True, text=True)
    assert (bare.returncode, bare.stdout, bare.stderr) == (0, "", "")
    path = f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"
    ran = subprocess.run(["sh", "-c", stop], env={"PATH": path}, input="{}", capture_output=True, text=True)
    assert ran.returncode == 0 and "no session id" in ran.stderr  # frontdesk's own hook answered
