"""The one Slurm clock parser, checked against Slurm's documented forms and every former caller's domain."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.durations import parse_slurm_clock


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5", 300),  # sbatch: a bare number is minutes
        ("5:30", 330),
        ("1:02:03", 3723),
        ("2-3", 2 * 86400 + 3 * 3600),
        ("2-3:04", 2 * 86400 + 3 * 3600 + 240),
        ("2-03:04:05", 2 * 86400 + 3 * 3600 + 245),
        ("00:01.500", 1.5),  # sacct TotalCPU
        (" 10:00 ", 600),
    ],
)
def test_slurm_forms(text: str, seconds: float) -> None:
    assert parse_slurm_clock(text) == seconds


def test_bare_seconds_for_slurm_output() -> None:
    assert parse_slurm_clock("42", bare_unit=1) == 42


@pytest.mark.parametrize("text", ["", "UNLIMITED", "1:2:3:4", "a:b", "-1", "1.5:00", "1-", "1--2", "9" * 70, "1:-2"])
def test_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_slurm_clock(text)


@given(st.integers(0, 400), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_what_slurm_prints_reads_back(days: int, h: int, m: int, s: int) -> None:
    total = days * 86400 + h * 3600 + m * 60 + s
    printed = f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else (f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}")
    assert parse_slurm_clock(printed) == total


@given(st.text(max_size=30))
def test_never_anything_but_a_number_or_value_error(text: str) -> None:
    try:
        value = parse_slurm_clock(text)
    except ValueError:
        return
    assert value >= 0
