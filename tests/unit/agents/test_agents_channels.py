"""Channel selection is data-driven; headless argv per harness."""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.agents.channels.base import Channel, choose, load_channels
from frontdesk.agents.channels.headless import resume_argv
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState


def test_load_follows_the_configured_order_and_skips_absent_modules() -> None:
    chans = load_channels(AgentSettings(channels=("headless", "inbox", "hooks", "bogus")))
    names = [c.name for c in chans]
    assert names[0] == "headless" and names[-1] == "hooks" and "bogus" not in names
    assert all(isinstance(c, Channel) for c in chans)


class _Fake:
    confirms_later = False

    def __init__(self, name: str, ok: bool) -> None:
        self.name, self.ok = name, ok

    def available(self, session: Session) -> tuple[bool, str]:
        return self.ok, "yes" if self.ok else "no"

    async def deliver(self, session: Session, text: str, job_ids: Sequence[int]) -> bool:
        return True


def test_choose_keeps_order_and_gives_a_reason_per_channel() -> None:
    s = Session(id="s", user="u")
    usable, reasons = choose([_Fake("a", False), _Fake("b", True), _Fake("c", True)], s)
    assert [c.name for c in usable] == ["b", "c"]
    assert reasons == ["a: no", "b: yes", "c: yes"]


def test_headless_needs_permission_and_an_ended_session() -> None:
    from frontdesk.agents.channels.headless import HeadlessChannel

    s = Session(id="s", user="nobody-here", harness=Harness.CLAUDE_CODE, turn_state=TurnState.ENDED)
    ok, why = HeadlessChannel(AgentSettings()).available(s)
    assert not ok and "allow_headless" in why


def test_resume_argv() -> None:
    cfg = AgentSettings()
    claude = Session(id="abc", user="u", harness=Harness.CLAUDE_CODE)
    codex = Session(id="t-1", user="u", harness=Harness.CODEX)
    assert resume_argv(claude, "R", cfg) == ["claude", "-p", "R", "--resume", "abc", "--output-format", "json"]
    assert resume_argv(codex, "R", cfg) == ["codex", "exec", "--skip-git-repo-check", "resume", "t-1", "R"]
    assert resume_argv(Session(id="x", user="u"), "R", cfg) is None
