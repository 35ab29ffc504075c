"""A session's turn counter, robust to a lost hook (issue 18): pure transitions over a `TurnMark`.

The counter numbers the keys of a session's submissions (`session:<id>:turn<N>:...`), so a turn replayed
after a resume must get the number its first run got. Counting `UserPromptSubmit` hooks is not enough: a
hook run while the gateway is down is lost (the hook fails open), and every later turn would then be
numbered one less, and a turn killed before any of its hooks arrived would be replayed as a new one.

So turns are keyed by the harness's own id for them, which every hook carries (Claude Code's `prompt_id`,
Codex's `turn_id`): any hook with an id the gateway has not seen opens the next turn, whichever hook it is,
so a lost `UserPromptSubmit` is made good by the turn's next hook (`PostToolUse`, `Stop`). A submission that
arrives while the session is idle (its last turn stopped) opens a turn the gateway did not hear start
(`inferred`); the turn's first hook with an id then names it instead of opening another. A resume of an
unfinished turn sets `continue_turn`: the resumed run's first new id keeps the turn's number.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["TurnMark", "after_hook", "after_submission"]

_PROMPT = "UserPromptSubmit"
_ENDS = ("Stop", "SessionEnd")
_BACKGROUND = ("rewake",)
"""frontdesk's own wait in the background (Claude Code's async rewake hook): begun at some turn's Stop, it
outlives that turn (a gateway restart, a resume) and carries the older turn's id, so it never opens a turn."""


@dataclass(frozen=True)
class TurnMark:
    """Where a session's turns stand, as the campaign row keeps it."""

    turn: int = 0
    prompt_id: str | None = None
    """The harness's id of the current turn (None: unknown, or a harness that sends none)."""
    continue_turn: bool = False
    """A resume of an unfinished turn: the next turn opened keeps `turn`."""
    inferred: bool = False
    """The current turn was opened by a submission (its prompt hook never arrived) and has not ended."""

    def _next(self, prompt_id: str | None) -> TurnMark:
        if self.continue_turn:
            return replace(self, prompt_id=prompt_id, continue_turn=False)
        return replace(self, turn=self.turn + 1, prompt_id=prompt_id, inferred=False)


def after_hook(mark: TurnMark, event: str, prompt_id: str | None) -> TurnMark:
    """The mark after one hook run: a prompt, or an id not seen before, opens the next turn (once)."""
    if event in _BACKGROUND:
        return mark
    if prompt_id is not None and prompt_id == mark.prompt_id:
        new = mark  # the same turn again (its Stop, a repeated delivery of its prompt hook)
    elif mark.inferred and mark.prompt_id is None and prompt_id is not None:
        new = replace(mark, prompt_id=prompt_id)  # the turn a submission opened gets its name
    elif mark.inferred and mark.prompt_id is None and event == _PROMPT:
        new = replace(mark, inferred=False)  # that turn's own prompt hook, late (a harness without turn ids)
    elif event == _PROMPT or prompt_id is not None:
        new = mark._next(prompt_id)
    else:
        new = mark  # no id, not a prompt (SessionStart, notify, an older harness's Stop)
    return replace(new, inferred=False) if event in _ENDS else new


def after_submission(mark: TurnMark, idle: bool) -> TurnMark:
    """The mark when a submission arrives: one while the session is idle opens the turn its lost hook missed."""
    if not idle or mark.inferred:
        return mark
    return replace(mark._next(None), inferred=True)
