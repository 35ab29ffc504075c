"""The turn counter keyed by the harness's turn ids (agents/campaign_turns.py): a lost hook shifts nothing."""

from __future__ import annotations

from functools import reduce

from hypothesis import given
from hypothesis import strategies as st

from frontdesk.agents.campaign_turns import TurnMark, after_hook, after_submission


def _hooks(mark: TurnMark, *calls: tuple[str, str | None]) -> TurnMark:
    return reduce(lambda m, c: after_hook(m, c[0], c[1]), calls, mark)


def test_each_turn_id_opens_one_turn_whichever_hook_brings_it() -> None:
    m = _hooks(TurnMark(), ("SessionStart", None), ("UserPromptSubmit", "p1"), ("PostToolUse", "p1"), ("Stop", "p1"))
    assert m.turn == 1 and m.prompt_id == "p1"
    lost = _hooks(m, ("Stop", "p2"))  # turn 2's prompt hook was lost: its Stop counts it
    assert lost.turn == 2 and _hooks(lost, ("UserPromptSubmit", "p3")).turn == 3
    assert _hooks(m, ("UserPromptSubmit", "p1")).turn == 1  # the same prompt hook delivered twice


def test_hooks_without_ids_count_prompts_as_before() -> None:
    m = _hooks(TurnMark(), ("UserPromptSubmit", None), ("Stop", None), ("UserPromptSubmit", None), ("notify", None))
    assert m.turn == 2


def test_a_submission_while_idle_opens_the_turn_whose_prompt_was_lost_and_its_hooks_name_it() -> None:
    idle = _hooks(TurnMark(), ("UserPromptSubmit", "p1"), ("Stop", "p1"))
    opened = after_submission(idle, idle=True)
    assert opened.turn == 2 and opened.inferred and opened.prompt_id is None
    assert after_submission(opened, idle=True) == opened  # more submissions in that turn: the same turn
    named = _hooks(opened, ("PostToolUse", "p2"))
    assert named.turn == 2 and named.prompt_id == "p2" and named.inferred
    ended = _hooks(named, ("Stop", "p2"))
    assert ended.turn == 2 and not ended.inferred
    assert after_submission(ended, idle=False) == ended  # in a turn the gateway heard start: nothing to open


def test_a_resumed_unfinished_turn_keeps_its_number_for_its_first_new_id() -> None:
    m = TurnMark(turn=4, prompt_id="p4", continue_turn=True)
    resumed = _hooks(m, ("UserPromptSubmit", "r1"))
    assert resumed.turn == 4 and not resumed.continue_turn and _hooks(resumed, ("UserPromptSubmit", "p5")).turn == 5
    lost = after_submission(m, idle=True)  # the resumed run's prompt hook lost too
    assert lost.turn == 4 and lost.inferred and _hooks(lost, ("Stop", "r1")).turn == 4


def test_a_background_rewake_from_an_earlier_turn_opens_no_turn() -> None:
    """Turn 1's async rewake hook long-polls past its turn; retried after a gateway restart, it arrives while
    turn 2 (resumed under a new id) runs, carrying turn 1's id: the turn stays 2 (it was 3, flakily, in the
    real-harness test of a resumed turn)."""
    t1 = _hooks(TurnMark(), ("UserPromptSubmit", "p1"), ("Stop", "p1"))
    resumed = _hooks(TurnMark(turn=2, prompt_id=None, continue_turn=True), ("UserPromptSubmit", "r2"))
    assert resumed.turn == 2
    assert _hooks(resumed, ("rewake", "p1"), ("rewake", None)) == resumed
    assert _hooks(t1, ("rewake", "p1")) == t1 and _hooks(t1, ("Stop", "p2")).turn == 2


_EVENTS = st.sampled_from(["UserPromptSubmit", "PostToolUse", "Stop", "SessionStart", "notify"])


@given(st.lists(st.lists(_EVENTS, min_size=1, max_size=4), min_size=1, max_size=6))
def test_whatever_hooks_are_lost_a_turn_with_an_id_gets_its_true_number(turns: list[list[str]]) -> None:
    """Turns 1..n each deliver some of their hooks (any subset: the others were lost while the gateway was down);
    the count after each turn's hooks is the number of turns that delivered at least one hook with an id."""
    m, seen = TurnMark(), 0
    for n, events in enumerate(turns, start=1):
        with_ids = [e for e in events if e not in ("SessionStart", "notify")]
        for e in events:
            m = after_hook(m, e, f"p{n}" if e in with_ids else None)
        seen += 1 if with_ids else 0
        assert m.turn == seen


class _Recorder:
    """Takes the hook's one call to the gateway and answers that there is nothing to deliver."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, object]] = []

    def request(self, method: str, path: str, body: dict[str, object], timeout: float = 0) -> dict[str, object]:
        self.bodies.append(body)
        return {"delivery": None}


def test_the_hook_sends_the_harness_turn_id_and_drops_a_malformed_one() -> None:
    from frontdesk.agents.hooks import run_hook

    sent = {}
    for harness, payload in {
        "claude": ("claude-code", {"session_id": "s", "prompt_id": "01b062d1-c2c5-46bd-95e8-38570fc05f00"}),
        "codex": ("codex", {"session_id": "s", "turn_id": "01a23b30-6751-7341-ad6c-bbd8ac50e219"}),
        "odd": ("claude-code", {"session_id": "s", "prompt_id": "é; rm -rf x"}),
        "none": ("claude-code", {"session_id": "s"}),
    }.items():
        rec = _Recorder()
        run_hook("prompt", payload[0], 10, payload[1], {}, rec)
        sent[harness] = rec.bodies[0].get("prompt_id")
    assert sent == {
        "claude": "01b062d1-c2c5-46bd-95e8-38570fc05f00",
        "codex": "01a23b30-6751-7341-ad6c-bbd8ac50e219",
        "odd": None,
        "none": None,
    }
