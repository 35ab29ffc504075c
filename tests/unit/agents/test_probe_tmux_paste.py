"""What the tmux channel pastes is text, never keys: an ESC that ends a bracketed paste early (`ESC[201~`), a CR
that submits, a ^C, a C1 CSI are shown as `\\xNN`; line breaks and tabs stay (a lesson or report field that kept a
control character would otherwise type `!cmd` into Claude Code's bash mode after the paste ended)."""

from __future__ import annotations

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
