"""The exact JSON each harness expects from our hooks (Claude Code hooks reference; Codex hooks)."""

from __future__ import annotations

import json

from frontdesk.agents.hooks import reach_from_env, render_output

REPORT = {"delivery": True, "text": "[frontdesk] job you submitted ended: 7 COMPLETED.", "jobs": [7]}


def test_stop_blocks_with_the_report_as_reason() -> None:
    for harness in ("claude-code", "codex"):
        out, err, code = render_output(harness, "Stop", REPORT)
        assert json.loads(out) == {"decision": "block", "reason": REPORT["text"]}
        assert (err, code) == ("", 0)


def test_stop_with_nothing_lets_the_agent_stop() -> None:
    assert render_output("claude-code", "Stop", {"delivery": None}) == ("", "", 0)


def test_rewake_exits_2_with_the_report_on_stderr() -> None:
    assert render_output("claude-code", "rewake", REPORT) == ("", REPORT["text"] + "\n", 2)
    assert render_output("claude-code", "rewake", {"delivery": None, "superseded": True}) == ("", "", 0)


def test_session_start_and_prompt_add_context() -> None:
    for event in ("SessionStart", "UserPromptSubmit"):
        out, _, code = render_output("claude-code", event, {**REPORT, "active_jobs": []})
        assert code == 0
        assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": event, "additionalContext": REPORT["text"]}}


def test_prompt_with_running_jobs_adds_one_queue_line() -> None:
    got = {"delivery": None, "active_jobs": [{"id": 3, "name": "sweep", "state": "RUNNING"}], "unread": 0}
    out, _, _ = render_output("claude-code", "UserPromptSubmit", got)
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert ctx == "frontdesk: 1 active (3 sweep RUNNING); 0 unread reports"


def test_prompt_with_nothing_prints_nothing() -> None:
    got = {"delivery": None, "active_jobs": []}
    assert render_output("claude-code", "UserPromptSubmit", got) == ("", "", 0)


def test_reach_from_env_keeps_no_secrets() -> None:
    env = {
        "CLAUDE_PID": "4242",
        "TMUX": "/tmp/tmux-0/default,123,0",
        "TMUX_PANE": "%3",
        "CLAUDE_CODE_MESSAGING_TOKEN": "sekrit",
    }
    assert reach_from_env(env) == {"pid": 4242, "tmux_socket": "/tmp/tmux-0/default", "tmux_pane": "%3"}


def test_reach_marks_unattended_headless_runs() -> None:
    env = {"CLAUDE_CODE_SESSION_ATTENDED": "0", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}
    assert reach_from_env(env) == {"attended": False, "entrypoint": "sdk-cli"}
