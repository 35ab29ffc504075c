"""Durations and sizes are ASCII: `--time ٣s` (an Arabic-Indic 3) and `--mem ٣G` were accepted as 3 s and 3 GiB
(Python's \\d and int() read any script's digits), which no scheduler or person reads that way."""

from __future__ import annotations

import pytest

from frontdesk.spec.units import parse_duration, parse_memory


@pytest.mark.parametrize("text", ["٣s", "٣", "١٠m", "３h", "5\u00a0m"])
def test_a_duration_in_other_digits_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["٣G", "３M", "1\u00a0G"])
def test_a_size_in_other_digits_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_memory(text)


def test_ascii_ones_still_parse() -> None:
    assert (parse_duration(" 5m "), parse_duration("1-25:61"), parse_memory("1 G")) == (300, 180060, 1024**3)
