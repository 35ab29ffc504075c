"""Slurm job arrays without a cluster: task lists, task ids, finding a task in captured `scontrol` output
(tests/unit/slurm/data/scontrol-arrays.txt, taken from the lab), and the array script's golden file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.backends.base import BackendJob, JobState
from frontdesk.backends.slurm.array_script import array_option, common_env, render_array_script
from frontdesk.backends.slurm.arrays import (
    TaskList,
    compress_indices,
    find_task,
    parse_task_list,
    split_task_id,
    task_index,
)
from frontdesk.backends.slurm.backend import SlurmBackend
from frontdesk.backends.slurm.parse import parse_scontrol_jobs, record_to_status
from frontdesk.errors import SpecError

CAPTURED = Path(__file__).parent / "data" / "scontrol-arrays.txt"
"""Four arrays on the lab: 856 `--array=0-5%2` (0, 1 ended, 2-5 pending behind the throttle), 857
`1,3,5-11:2 --hold`, 858 `0-3 --hold` then `scancel 858`, 859 `0-4 --hold` then `scancel 859_2`."""


@pytest.mark.parametrize(
    ("text", "inside", "outside", "throttle"),
    [
        ("2-5%2", [2, 3, 4, 5], [0, 1, 6], 2),
        ("1,3,5,7,9,11", [1, 3, 11], [0, 2, 12], None),
        ("0-1,3-4", [0, 1, 3, 4], [2, 5], None),
        ("0-20:5", [0, 5, 20], [1, 4, 21, 25], None),
        ("7", [7], [6, 8], None),
    ],
)
def test_task_lists_as_slurm_folds_them(text: str, inside: list[int], outside: list[int], throttle: int | None) -> None:
    tasks = parse_task_list(text)
    assert all(i in tasks for i in inside)
    assert not any(i in tasks for i in outside)
    assert tasks.throttle == throttle


@pytest.mark.parametrize("bad", ["", "a", "3-1", "1-5:0", "1-", "1%x", "0-4000001", "1;rm", "1,,2"])
def test_malformed_task_lists_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_task_list(bad)


@given(st.sets(st.integers(min_value=0, max_value=5000), min_size=1, max_size=200), st.none() | st.integers(1, 50))
def test_compressed_indices_name_exactly_the_tasks(indices: set[int], limit: int | None) -> None:
    text = compress_indices(indices, limit)
    tasks = parse_task_list(text)
    assert tasks.count() == len(indices)
    assert all(i in tasks for i in indices)
    assert tasks.throttle == limit


def test_compress_joins_runs() -> None:
    assert compress_indices([0, 1, 2, 3, 7, 9, 10]) == "0-3,7,9-10"
    assert compress_indices([5], 2) == "5%2"
    assert compress_indices([0, 2, 4], 2) == "0-4:2%2" and compress_indices([3, 7]) == "3-7:4"  # a step as given
    assert compress_indices([0, 2, 3]) == "0,2-3"
    with pytest.raises(ValueError):
        compress_indices([])
    with pytest.raises(ValueError):
        compress_indices([-1])


@given(st.text(max_size=30))
def test_hostile_task_lists_raise_value_error_or_parse(text: str) -> None:
    try:
        result = parse_task_list(text)
    except ValueError:
        return
    assert isinstance(result, TaskList) and result.count() >= 1


def test_task_ids() -> None:
    assert split_task_id("844_3") == ("844", 3)
    assert split_task_id("844") is None
    assert split_task_id("844_[2-9]") is None
    assert split_task_id("a_1") is None


def _captured() -> dict[str, dict[str, str]]:
    return {r["JobId"]: r for r in parse_scontrol_jobs(CAPTURED.read_text())}


@pytest.mark.parametrize(
    ("task", "state", "own_record"),
    [
        ("856_0", JobState.COMPLETED, True),
        ("856_1", JobState.COMPLETED, True),
        ("856_2", JobState.PENDING, False),
        ("856_5", JobState.PENDING, False),
        ("857_5", JobState.PENDING, False),
        ("857_11", JobState.PENDING, False),
        ("858_0", JobState.CANCELLED, False),
        ("858_3", JobState.CANCELLED, False),
        ("859_4", JobState.PENDING, False),
    ],
)
def test_each_task_is_found_in_real_scontrol_output(task: str, state: JobState, own_record: bool) -> None:
    records = _captured()
    record = find_task(task, records, task_index(records.values()))
    assert record is not None
    assert (record["ArrayTaskId"].isdigit()) is own_record
    status = record_to_status(record)
    assert status is not None and status.state is state


@pytest.mark.parametrize("task", ["856_6", "857_2", "857_13", "858_4", "859_2", "999_0", "856"])
def test_tasks_not_in_the_array_are_not_found(task: str) -> None:
    """859_2 was cancelled while pending: Slurm forgets it at once (the backend remembers it cancelled)."""
    records = _captured()
    assert find_task(task, records, task_index(records.values())) is None


def test_query_answers_task_ids_from_one_snapshot() -> None:
    records = _captured()
    found = dict(SlurmBackend._find(records, ["856_0", "856_3", "859_2", "860", "857_1"]))
    assert set(found) == {"856_0", "856_3", "860", "857_1"}
    assert found["856_0"] is found["860"]  # a started task's own record, by either id


# -- the array script ---------------------------------------------------------------------------------------


def task(index: int, **kw: Any) -> BackendJob:
    job_id = 20 + index
    base: dict[str, Any] = dict(
        job_id=job_id,
        attempt=1,
        name=f"sweep[{index}]",
        argv=["python", "train.py", "--lr", str(0.1 * (index + 1))],
        workdir=Path("/home/ada/proj"),
        env={
            "FRONTDESK_JOB_ID": str(job_id),
            "FRONTDESK_ARRAY_TASK_ID": str(index),
            "SLURM_ARRAY_TASK_ID": str(index),
            "PROJECT": "demo",
            "SEED": str(index * 7),
        },
        job_dir=Path(f"/srv/frontdesk/jobs/{job_id}/1"),
        memory_bytes=2**30,
        array_id=19,
        array_index=index,
    )
    base.update(kw)
    return BackendJob(**base)


def test_array_script(golden: Any) -> None:
    jobs = [task(0), task(1), task(3, argv=["sh", "-c", "echo 'it''s' $X"])]
    text = render_array_script(jobs, Path("/srv/frontdesk/jobs/20/1/array"), default_partition="hpc")
    golden.check("array.sbatch", text)
    assert common_env(jobs) == {"PROJECT": "demo"}
    assert array_option(jobs, 2) == "--array=0-1,3%2"


def test_tasks_asking_different_resources_are_not_one_array() -> None:
    with pytest.raises(SpecError):
        render_array_script([task(0), task(1, cpus=4)], Path("/tmp/a"))


def test_a_task_without_an_index_is_refused() -> None:
    with pytest.raises(SpecError):
        render_array_script([task(0, array_index=None)], Path("/tmp/a"))


# -- the sbatch shim and the epilog push ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "directive", "expected"),
    [
        (["--array=0-3%2"], {}, "", "0-3%2"),
        (["-a", "1,3,5-9"], {}, "", "1,3,5-9"),
        (["-a0-15:4"], {}, "", "0-15:4"),
        ([], {"SBATCH_ARRAY_INX": "0-1"}, "", "0-1"),
        ([], {}, "#SBATCH --array=2-4\n", "2-4"),
        (["--array=7"], {}, "#SBATCH --array=2-4\n", "7"),  # the command line wins
    ],
)
def test_the_sbatch_shim_makes_a_frontdesk_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str], directive: str, expected: str
) -> None:
    from frontdesk.shims.sbatch import build_spec

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "job.sh").write_text(f"#!/bin/bash\n{directive}echo hi\n")
    sub = build_spec([*argv, "--nodes=1", "job.sh"], str(tmp_path))
    assert sub.spec["array"] == expected
    assert sub.spec["script"].endswith("echo hi\n")  # the guard reads what every task runs
    assert not any(o.startswith("--array") for o in sub.spec["slurm"]["options"])
    assert "--nodes=1" in sub.spec["slurm"]["options"]


@pytest.mark.parametrize("bad", ["--array=3-1", "--array=x", "--array=0-3%0"])
def test_a_bad_array_fails_like_sbatch(tmp_path: Path, bad: str) -> None:
    from frontdesk.shims.sbatch import SbatchError, build_spec

    with pytest.raises(SbatchError, match="Invalid job array specification"):
        build_spec([bad, "--wrap", "true"], str(tmp_path))


def test_an_unknown_option_beside_an_array_is_refused_not_passed(tmp_path: Path) -> None:
    from frontdesk.shims.sbatch import SbatchError, build_spec

    with pytest.raises(SbatchError) as err:
        build_spec(["--array=0-3", "--no-such-option", "--wrap", "true"], str(tmp_path))
    assert err.value.status == 255


def test_the_epilog_push_names_the_task() -> None:
    from frontdesk.cli.slurm import _epilog_ids

    env = {"SLURM_JOB_ID": "845", "SLURM_ARRAY_JOB_ID": "844", "SLURM_ARRAY_TASK_ID": "0"}
    assert _epilog_ids(env) == ["844_0", "845"]
    assert _epilog_ids({"SLURM_JOB_ID": "12"}) == ["12"]
    assert _epilog_ids({"SLURM_JOB_ID": "12", "SLURM_ARRAY_JOB_ID": "x", "SLURM_ARRAY_TASK_ID": "1"}) == ["12"]


def test_a_task_submitted_on_its_own_still_sees_its_index() -> None:
    """A retry (or a task that waited on its own dependency) is a plain Slurm job: Slurm sets no array
    variables, so the script exports the task's own."""
    from frontdesk.backends.slurm.render import render_script

    text = render_script(task(3))
    assert "export SLURM_ARRAY_TASK_ID=3\n" in text and "export FRONTDESK_ARRAY_TASK_ID=3\n" in text
    assert "SLURM_ARRAY" not in render_script(task(3, array_index=None, array_id=None))
