"""`[agents]` validation and the session model."""

from __future__ import annotations

import pytest

from frontdesk.agents.model import AgentSettings, Harness, Session
from frontdesk.errors import ConfigError


def test_defaults_and_overrides() -> None:
    s = AgentSettings.from_section({"allow_headless": True, "batch_window_s": 2, "channels": ["hooks"]})
    assert s.allow_headless is True and s.batch_window_s == 2.0 and s.channels == ("hooks",)
    assert AgentSettings.from_section({}).channels == ("inbox", "codex_live", "hooks", "tmux", "headless")


@pytest.mark.parametrize(
    "section",
    [{"allow_headless": "yes"}, {"batch_window_s": -1}, {"channels": "hooks"}, {"nonsense": 1}, {"claude_bin": ""}],
)
def test_bad_settings_say_what_is_wrong(section: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"\[agents\]"):
        AgentSettings.from_section(section)


def test_harness_names() -> None:
    assert Harness.parse("claude") is Harness.CLAUDE_CODE
    assert Harness.parse("codex") is Harness.CODEX
    assert Harness.parse("emacs") is Harness.OTHER


def test_session_json_never_carries_tokens() -> None:
    s = Session(id="a", user="u", reach={"messaging_token": "secret", "pid": 3})
    assert s.to_dict()["reach"] == {"pid": 3}
