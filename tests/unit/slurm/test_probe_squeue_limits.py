"""The squeue answer the gateway builds is bounded: wide fields times many rows, or a long command line, are
handed to the real squeue (Passthrough) or not cached, never built whole in the gateway."""

from __future__ import annotations

import pytest

from frontdesk.backends.slurm import squeue_text
from frontdesk.backends.slurm.squeue_text import MAX_ANSWER_CHARS, Passthrough, answer


def _view(n: int) -> dict[str, object]:
    return {"jobs": [{"JobId": str(i), "JobState": "PENDING", "UserId": "ada(1000)"} for i in range(1, n + 1)]}


def test_an_answer_over_the_budget_is_passed_through() -> None:
    fmt = "%.9000i%.9000j"  # each width allowed; 2,000 rows of 18,000 characters are not
    assert 2000 * 18000 > MAX_ANSWER_CHARS
    with pytest.raises(Passthrough, match="MiB"):
        answer(["-h", "-o", fmt], {}, "ada", _view(2000))
    rc, out, _ = answer(["-h", "-o", fmt], {}, "ada", _view(3))
    assert rc == 0 and len(out) == 3 * 18001


def test_a_huge_width_in_squeue_format_is_passed_through() -> None:
    with pytest.raises(Passthrough, match="width"):
        answer(["-h"], {"SQUEUE_FORMAT": "%.99999999999i"}, "ada", None)


def test_a_long_command_line_is_not_kept_in_the_parse_cache() -> None:
    before = squeue_text._parse_cached.cache_info().currsize
    answer(["-h", "-n", "x" * 100_000], {}, "ada", _view(1))
    assert squeue_text._parse_cached.cache_info().currsize == before
