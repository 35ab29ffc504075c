"""The classifier on real failure output copied from public threads (tests/data/logs/real), not the catalog's own.

`excerpts.jsonl` was collected while the new kinds were written; `holdout.jsonl` after the catalog was
frozen. bench/memory_classify.py prints the per-kind table and the confusion of the misses.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from frontdesk.memory.classify import classify, load_catalog

REAL = Path(__file__).parents[2] / "data" / "logs" / "real"


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REAL / f"{name}.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["excerpts", "holdout"])
def test_every_excerpt_has_a_public_source_and_a_known_kind(name: str) -> None:
    rows = _rows(name)
    kinds = set(load_catalog().kinds)
    for row in rows:
        assert row["source"].startswith("https://") and row["text"].strip()
        assert row["kind"] in kinds, row["kind"]
    assert len({r["text"] for r in rows}) == len(rows), "duplicate excerpts"


def test_corpus_is_large_enough_and_kept_apart_from_the_catalog_examples() -> None:
    rows = _rows("excerpts")
    assert len(rows) >= 150 and len({r["kind"] for r in rows}) >= 25
    catalog_texts = {p.read_text().strip() for p in REAL.parent.glob("*/*.log")}
    assert not any(r["text"].strip() in catalog_texts for r in rows + _rows("holdout"))


@pytest.mark.parametrize("name", ["excerpts", "holdout"])
def test_accuracy_is_at_least_90_percent_and_no_kind_under_75(name: str) -> None:
    rows = _rows(name)
    per: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for row in rows:
        per[row["kind"]] += 1
        right[row["kind"]] += classify(row["text"], row.get("state")).kind == row["kind"]
    assert sum(right.values()) >= 0.9 * len(rows)
    assert all(right[k] >= 0.75 * n for k, n in per.items()), {k: (right[k], n) for k, n in per.items()}


def test_hints_are_sound_on_the_real_logs() -> None:
    """Every regex match holds one of its matcher's hints (else the prefilter would hide it)."""
    for row in _rows("excerpts") + _rows("holdout"):
        for m in load_catalog().matchers:
            for match in m.regex.finditer(row["text"]):
                assert not m.hints or any(h in match.group(0).lower() for h in m.hints), (m.id, row["source"])
