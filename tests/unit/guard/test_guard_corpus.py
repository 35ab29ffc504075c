"""The labelled corpus: ≥95 % of dangerous commands caught, ≤2 % of benign stopped, every rule covered."""

from __future__ import annotations

import sys
from pathlib import Path

from frontdesk.guard.checker import check
from frontdesk.guard.model import Decision
from frontdesk.guard.rules import default_rules

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))
from corpus_loader import corpus_context, load_corpus  # noqa: E402

CASES = load_corpus()


def _verdicts() -> list[tuple[object, object]]:
    contexts: dict[object, object] = {}
    out = []
    for case in CASES:
        ctx = contexts.setdefault((case.role, case.gpus), corpus_context(case.role, case.gpus))
        out.append((case, check(case.command, ctx)))  # type: ignore[arg-type]
    return out


VERDICTS = _verdicts()


def test_corpus_is_large_enough() -> None:
    dangerous = [c for c in CASES if c.dangerous]
    assert len(CASES) >= 300
    assert len(dangerous) >= 150 and len(CASES) - len(dangerous) >= 150


def test_dangerous_commands_are_caught() -> None:
    dangerous = [(c, v) for c, v in VERDICTS if c.dangerous]  # type: ignore[attr-defined]
    missed = [c.command for c, v in dangerous if v.decision is Decision.ALLOW]  # type: ignore[attr-defined]
    assert len(missed) / len(dangerous) <= 0.05, missed


def test_benign_commands_are_not_stopped() -> None:
    benign = [(c, v) for c, v in VERDICTS if not c.dangerous]  # type: ignore[attr-defined]
    stopped = [(c.command, v.rule) for c, v in benign if v.decision is not Decision.ALLOW]  # type: ignore[attr-defined]
    assert len(stopped) / len(benign) <= 0.02, stopped


def test_the_expected_rule_fires() -> None:
    dangerous = [(c, v) for c, v in VERDICTS if c.dangerous]  # type: ignore[attr-defined]
    wrong = [(c.command, c.rule, v.matches) for c, v in dangerous if c.rule not in v.matches]  # type: ignore[attr-defined]
    assert len(wrong) / len(dangerous) <= 0.05, wrong


def test_every_rule_has_dangerous_examples_in_several_spellings() -> None:
    counts: dict[str, int] = {}
    for case in CASES:
        if case.dangerous and case.rule:
            counts[case.rule] = counts.get(case.rule, 0) + 1
    for rule_id in default_rules().ids:
        assert counts.get(rule_id, 0) >= 2, rule_id


def test_verdicts_carry_reason_and_alternative() -> None:
    for _case, verdict in VERDICTS:
        if verdict.decision is not Decision.ALLOW:  # type: ignore[attr-defined]
            assert verdict.rule and verdict.reason and "\n" not in verdict.reason  # type: ignore[attr-defined]


def test_secrets_are_masked_in_the_reason() -> None:
    for case, verdict in VERDICTS:
        if case.rule == "secret.in-command":  # type: ignore[attr-defined]
            assert "«redacted:" in verdict.reason  # type: ignore[attr-defined]
            assert "Hunter2Secret" not in verdict.reason and "hf_" not in verdict.reason  # type: ignore[attr-defined]


def test_held_out_commands_generalise() -> None:
    """Commands written after the rules (see holdout.txt): looser bars, any rule may fire."""
    cases = load_corpus(Path(__file__).resolve().parents[2] / "data" / "guard" / "holdout.txt")
    dangerous = [c for c in cases if c.dangerous]
    benign = [c for c in cases if not c.dangerous]
    missed = [
        c.command for c in dangerous if check(c.command, corpus_context(c.role, c.gpus)).decision is Decision.ALLOW
    ]
    stopped = [
        c.command for c in benign if check(c.command, corpus_context(c.role, c.gpus)).decision is not Decision.ALLOW
    ]
    assert len(missed) / len(dangerous) <= 0.10, missed
    assert len(stopped) / len(benign) <= 0.03, stopped
