"""The secret corpus (tests/data/logs/secrets/corpus.jsonl): every case of issue 12 item 10 in several spellings.

Each case is masked by `redact`, survives a report's line limits masked, and never reaches a failure
signature, in any case of letters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.guard.secrets import find_secrets, redact
from frontdesk.memory.classify import classify
from frontdesk.reports.build import build_report
from report_helpers import job_record

CORPUS = Path(__file__).parents[2] / "data" / "logs" / "secrets" / "corpus.jsonl"
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _id(case: dict[str, Any]) -> str:
    return f"{case['kind']}:{case['note']}"


def _leaks(secret: str, text: str) -> bool:
    """Whether the secret, or a 12-character piece of it, shows in text (any case)."""
    low, sec = text.lower(), secret.lower()
    pieces = {sec[i : i + 12] for i in range(0, max(1, len(sec) - 11))} if len(sec) > 12 else {sec}
    return any(p in low for p in pieces)


def test_corpus_is_big_enough() -> None:
    assert len(CASES) >= 60
    assert len({c["kind"] for c in CASES}) >= 12


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_redact_masks_every_case(case: dict[str, Any]) -> None:
    out = redact(case["text"])
    assert not _leaks(case["secret"], out), out
    assert "«redacted:" in out
    assert any(s.kind == case["kind"] for s in find_secrets(case["text"]))


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_report_tails_keep_every_case_masked(case: dict[str, Any]) -> None:
    job = job_record(id=1, state="FAILED", exit_code=1, spec={"argv": ["x"]})
    # a long line holding the secret, cut by the report's width, and a key cut by its line count
    text = "noise " * 60 + case["text"] + " trailing" * 40 + "\nfinal line\n"
    report = build_report(job, stdout_text=text, stderr_text=text, redact=redact, lines=3)
    dumped = json.dumps(report.wire(), ensure_ascii=False)
    assert not _leaks(case["secret"], dumped)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_signature_never_holds_a_secret(case: dict[str, Any]) -> None:
    for line in (case["text"], f"RuntimeError: {case['text']}", f"Error: failed: {case['text']}"):
        sig = classify(line, "FAILED", 1)
        for field in (sig.key, sig.detail, sig.cause, sig.line, sig.normalised_line):
            assert not _leaks(case["secret"], field), field


def test_distinct_private_keys_get_distinct_fingerprints() -> None:
    keys = [c for c in CASES if c["kind"] == "private-key" and c["note"].endswith("block")]
    assert len(keys) >= 3
    tags = {redact(c["text"]).split("«")[1].split("»")[0] for c in keys}
    assert len(tags) == len(keys)


def test_body_lines_of_one_key_are_masked_one_by_one() -> None:
    case = next(c for c in CASES if c["note"] == "body lines only, BEGIN cut")
    out = redact(case["text"])
    body = [ln for ln in case["text"].splitlines() if not ln.startswith(("-----", "step"))]
    assert out.count("«redacted:private-key:") == len(body)


@pytest.mark.parametrize(
    "text",
    [
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "disk-usage-report-for-cluster-nodes-all",
        "ThisIsAVeryLongJavaClassNameWithoutAnyDigitsInIt",
        "bypass=on compass=north",
        "epoch 3: loss=0.1234 token_count=123456789",
        "/home/alice/project/checkpoints/run-2024-01-01/model.safetensors",
    ],
)
def test_ordinary_log_lines_are_untouched(text: str) -> None:
    assert redact(text) == text


@settings(max_examples=300, deadline=None)
@given(
    case=st.sampled_from(CASES),
    before=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60),
    after=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60),
)
def test_a_planted_secret_is_masked_whatever_lines_surround_it(case: dict[str, Any], before: str, after: str) -> None:
    text = f"{before}\n{case['text']}\n{after}"
    assert not _leaks(case["secret"], redact(text))
    sig = classify(text, "FAILED", 1)
    assert not _leaks(case["secret"], sig.key + sig.cause + sig.line + sig.normalised_line)
