"""What the channels hand a harness is text, never keys or options: the tmux channel shows an ESC that ends a
bracketed paste early (`ESC[201~`), a CR that submits, a ^C or a C1 CSI as `\\xNN` (line breaks and tabs stay), and
a session id that reads as an option never goes on a harness's command line."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from frontdesk.agents.channels.tmux import pasteable


def test_keys_in_a_report_are_shown_not_typed() -> None:
    assert pasteable("a\x1b[201~!touch /tmp/x\r\nb\tc\x03\x9b[1m") == "a\\x1b[201~!touch /tmp/x\\x0d\nb\tc\\x03\\x9b[1m"


@given(st.text())
def test_nothing_pasted_is_a_control_key(text: str) -> None:
    out = pasteable(text)
    assert all(ch in "\n\t" or not (ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F) for ch in out)
    assert pasteable(out) == out  # what is shown stays as shown


def test_an_id_that_reads_as_an_option_never_reaches_a_harness_command_line() -> None:
    """`claude -p … --resume --dangerously-skip-permissions`: a session id (any string a submission names) that
    starts with '-' would be an option of the harness, not its id; resume refuses it, headless delivery skips it."""
    import pytest

    from frontdesk.agents.campaign_resume import build_plan
    from frontdesk.agents.channels.headless import HeadlessChannel
    from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState
    from frontdesk.errors import UserError

    sys.path.insert(0, str(Path(__file__).parent))
    from test_agents_campaign import _campaign

    bad = "--dangerously-skip-permissions"
    with pytest.raises(UserError, match="cannot be passed"):
        build_plan(_campaign(resume_handle=bad), [], AgentSettings(), headless=True)
    assert build_plan(_campaign(resume_handle="ok-1"), [], AgentSettings(), headless=True).argv[-3] == "ok-1"
    s = Session(id=bad, user=getpass.getuser(), harness=Harness.CLAUDE_CODE, turn_state=TurnState.ENDED)
    ok, why = HeadlessChannel(AgentSettings(allow_headless=True, claude_bin=sys.executable)).available(s)
    assert not ok and "cannot be passed" in why


def test_codex_live_declines_a_thread_id_that_reads_as_an_option() -> None:
    from frontdesk.agents.channels.codex_live import CodexLiveChannel
    from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState

    s = Session(id="--help", user=getpass.getuser(), harness=Harness.CODEX, turn_state=TurnState.IDLE)
    ok, why = CodexLiveChannel(AgentSettings(codex_bin=sys.executable)).available(s)
    assert not ok and "cannot be passed" in why
