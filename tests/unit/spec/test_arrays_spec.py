"""The array range syntax and sweep rendering (spec/arrays.py), and their checks in the spec model."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.errors import SpecError
from frontdesk.spec.arrays import (
    MAX_ARRAY_TASKS,
    parse_array,
    render_argv,
    render_script,
    sweep_env,
    sweep_points,
)
from frontdesk.spec.model import validate_spec


@pytest.mark.parametrize(
    ("text", "indices", "limit"),
    [
        ("0-3", (0, 1, 2, 3), None),
        ("1,3,5-7", (1, 3, 5, 6, 7), None),
        ("0-9:3", (0, 3, 6, 9), None),
        ("0-99%8", tuple(range(100)), 8),
        (" 7 ", (7,), None),
        ("3,1,3,2-3", (1, 2, 3), None),
    ],
)
def test_ranges_parse_like_sbatch(text: str, indices: tuple[int, ...], limit: int | None) -> None:
    rng = parse_array(text)
    assert rng.indices == indices
    assert rng.max_running == limit


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "expected task indices"),
        ("%4", "expected task indices"),
        ("5-1", "ends before it starts"),
        ("0-3%0", "at least 1"),
        ("0-3%x", "whole number"),
        ("a-b", "is not an index"),
        ("1;rm", "is not an index"),
        ("0-3:0", "at least 1"),
        (f"0-{MAX_ARRAY_TASKS}", f"more than {MAX_ARRAY_TASKS} tasks"),
        ("0-99999999", "over the largest"),
        (",".join(str(i) for i in range(MAX_ARRAY_TASKS + 1)), "more than"),
    ],
)
def test_bad_ranges_say_why_on_one_line(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said) as info:
        parse_array(text)
    assert "\n" not in str(info.value)


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 50), st.integers(1, 5)), min_size=1, max_size=8))
def test_any_list_of_ranges_gives_exactly_their_union(parts: list[tuple[int, int, int]]) -> None:
    text = ",".join(f"{lo}-{lo + span}:{step}" for lo, span, step in parts)
    expected = sorted({i for lo, span, step in parts for i in range(lo, lo + span + 1, step)})
    assert list(parse_array(text).indices) == expected


def test_a_grid_varies_the_last_name_fastest() -> None:
    points = sweep_points({"lr": [0.001, 0.0001], "seed": [1, 2, 3]})
    assert len(points) == 6
    assert points[0] == {"lr": 0.001, "seed": 1}
    assert points[1] == {"lr": 0.001, "seed": 2}
    assert points[3] == {"lr": 0.0001, "seed": 1}


def test_a_list_of_points_keeps_its_order_and_needs_the_same_names() -> None:
    assert sweep_points([{"a": 1, "b": "x"}, {"b": "y", "a": 2}]) == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    with pytest.raises(ValueError, match="point 1 names"):
        sweep_points([{"a": 1}, {"b": 2}])


@pytest.mark.parametrize(
    ("sweep", "said"),
    [
        ({}, "at least one parameter"),
        ({"lr": []}, "has no values"),
        ({"lr": [[1]]}, "string, number or boolean"),
        ({"1x": [1]}, "is not a name"),
        ({"lr": [1], "LR": [2]}, "differ only in case"),
        ({"a": list(range(101)), "b": list(range(100))}, "more than"),
        ({"a": ["x\ny"]}, "one line"),
        ("lr=1", "mapping"),
        ([], "at least one point"),
    ],
)
def test_bad_sweeps_say_why(sweep: object, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        sweep_points(sweep)


def test_argv_gets_values_as_they_are_but_shell_text_gets_them_quoted() -> None:
    point = {"lr": "1e-3", "tag": "a b;touch x"}
    assert render_argv(["python", "train.py", "--lr={lr}", "--tag", "{tag}"], point) == [
        "python",
        "train.py",
        "--lr=1e-3",
        "--tag",
        "a b;touch x",
    ]
    rendered = render_argv(["/bin/sh", "-c", "echo {tag} {lr}"], point)
    assert rendered[2] == "echo 'a b;touch x' 1e-3"
    assert render_script("echo {tag}\n", point) == "echo 'a b;touch x'\n"
    assert sweep_env({"lr": 0.001, "flag": True}) == {"FD_SWEEP_LR": "0.001", "FD_SWEEP_FLAG": "true"}


@given(st.text(alphabet=st.characters(blacklist_characters="\0\n\r", codec="utf-8"), max_size=40))
def test_a_quoted_value_reaches_the_shell_as_one_word_whatever_it_holds(value: str) -> None:
    script = render_script("printf '%s' {v}", {"v": value})
    assert shlex.split(script)[2] == value


def test_the_shell_prints_a_hostile_value_without_running_it(tmp_path: object) -> None:
    canary = f"{tmp_path}/ran"
    value = f"$(touch {canary}); `touch {canary}`"
    argv = render_argv(["sh", "-c", "printf %s {v}"], {"v": value})
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=10).stdout
    assert out == value
    import os

    assert not os.path.exists(canary)


def test_the_spec_checks_arrays_and_sweeps_with_one_line_errors() -> None:
    spec = validate_spec({"command": ["echo", "{lr}"], "sweep": {"lr": [1, 2], "seed": [1, 2, 3]}, "array": "0-5%2"})
    rng = spec.array_range()
    assert rng is not None and rng.size == 6 and rng.max_running == 2
    assert spec.sweep_point(4) == {"lr": 2, "seed": 2}
    assert validate_spec({"command": ["x"], "sweep": [{"a": 1}]}).array_range() is not None
    assert validate_spec({"command": ["x"]}).array_range() is None
    for bad, said in [
        ({"command": ["x"], "array": "5-1"}, "array: range '5-1' ends before it starts"),
        ({"command": ["x"], "sweep": {"a": [1]}, "array": "0-3"}, "past the sweep's 1 points"),
        ({"command": ["x"], "aftercorr": 3}, "'aftercorr' needs 'array' or 'sweep'"),
        ({"command": ["x"], "array": "1", "array_report": "never"}, "array_report"),
    ]:
        with pytest.raises(SpecError, match=said) as info:
            validate_spec(bad)
        assert "\n" not in str(info.value)
