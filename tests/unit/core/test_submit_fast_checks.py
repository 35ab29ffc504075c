"""The submission path's checks in C (issue 21): the same answers and the same refusals as the walks they skip.

A submitted environment is checked by joining its names and values (`check_text`, `jobenv._check`) and filtered by
remembering which names of the same set were dropped (`filter_env`); a stored row is read by position
(`JobRecord.from_row`) and a spec's fields are read from one parse (`JobRecord.spec_get`). Each is compared here with
the per-item rule, on the inputs that must still be refused.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.errors import SpecError, UserError
from frontdesk.events.bus import Bus
from frontdesk.events.models import Event, EventKind
from frontdesk.jobenv import DEFAULT_DENY, MAX_ENV_BYTES, filter_env, matches, site_filter
from frontdesk.jobs.record import EndStage, JobRecord
from frontdesk.jobs.state import JobState
from frontdesk.spec.bounds import check_text
from frontdesk.store.db import CHECKPOINT_PAGES, WAL_KEPT_BYTES, open_db
from frontdesk.store.jobs import JobStore


def _env(n: int = 40) -> dict[str, str]:
    return {f"VAR_{i}": f"value {i}" for i in range(n)}


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("a\x00b", "context.env.VAR_7: contains a NUL byte"),
        ("lone \ud800", "context.env.VAR_7: contains a lone surrogate"),
    ],
)
def test_a_bad_value_in_a_large_environment_is_refused_and_named(bad: str, words: str) -> None:
    env = _env()
    env["VAR_7"] = bad
    with pytest.raises(SpecError, match=words.replace(".", r"\.")):
        check_text({"cwd": "/tmp", "env": env}, "context")


def test_a_bad_name_in_a_large_environment_is_refused() -> None:
    env = _env()
    env["BAD\ud800"] = "x"
    with pytest.raises(SpecError, match=r"\(a key\): contains a lone surrogate"):
        check_text({"env": env}, "context")


def test_a_large_environment_of_plain_or_unicode_text_passes_and_counts_toward_the_budget() -> None:
    env = _env()
    env["LANG_NAME"] = "café ☕"  # not ASCII, but valid: walked one by one, accepted
    check_text({"env": env}, "context")
    with pytest.raises(SpecError, match="too large"):
        check_text({"env": _env(40)}, "context", budget=30)  # 40 plain values are 40 nodes, as walked
    check_text({"env": _env(40)}, "context", budget=42)  # the context, the env and its 40 values


def test_non_string_values_in_a_large_mapping_are_still_walked() -> None:
    data = {f"k{i}": i for i in range(20)} | {"x": float("inf")}
    with pytest.raises(SpecError, match="finite"):
        check_text(data, "spec")


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("A=B", "x", "not an environment variable"),
        ("", "x", "not an environment variable"),
        ("NUL\x00NAME", "x", "not an environment variable"),
        ("GOOD", "nul\x00value", "not an environment variable"),
    ],
)
def test_the_gateway_filter_refuses_what_is_no_environment_variable(name: str, value: str, words: str) -> None:
    env = _env()
    env[name] = value
    with pytest.raises(UserError, match=words):
        site_filter(env, {})


def test_the_gateway_filter_refuses_non_strings_and_an_oversized_environment() -> None:
    env: dict[str, object] = dict(_env())
    env["NUM"] = 3
    with pytest.raises(UserError, match="names and values must be strings"):
        site_filter(env, {})
    big = _env() | {"BIG": "x" * MAX_ENV_BYTES}
    with pytest.raises(UserError, match="more than the"):
        site_filter(big, {})


def test_the_same_names_with_new_values_give_the_new_values_and_drop_the_same_secrets() -> None:
    first = _env() | {"API_TOKEN": "s1", "PWD": "/a"}
    second = {k: v + "!" for k, v in first.items()}
    for env in (first, second, first):
        got = site_filter(env, {})
        assert got == {k: v for k, v in env.items() if k not in ("API_TOKEN", "PWD")}
        assert list(got) == [k for k in env if k not in ("API_TOKEN", "PWD")]  # the order kept
    allowed = first | {"FRONTDESK_ENV_ALLOW": "API_TOKEN"}  # the submitter's own allow list: other lists
    assert site_filter(allowed, {})["API_TOKEN"] == "s1"
    assert "API_TOKEN" not in site_filter(allowed, {"deny": ["API_*"]})


VALUES = st.text(alphabet="ab", max_size=3)


@settings(max_examples=200)
@given(st.lists(st.dictionaries(st.sampled_from(["HOME", "A_TOKEN", "PWD", "X", "MY_SECRET_1"]), VALUES), max_size=8))
def test_remembered_drops_answer_as_the_rule(envs: list[dict[str, str]]) -> None:
    for env in envs:  # the same name sets come back with other values
        want = {k: v for k, v in env.items() if not any(matches(k, d) for d in DEFAULT_DENY)}
        assert filter_env(env) == want


def test_a_row_is_read_by_position_and_a_spec_field_from_one_parse(tmp_path: Path) -> None:
    store = JobStore(open_db(tmp_path / "fd.db"))
    spec = {"command": ["true"], "depends_on": [1, 2], "fail_action": "ignore", "pad": "x" * 10_000}
    rec = store.insert_job_record(
        name="n",
        spec=json.dumps(spec),
        context="{}",
        state="PENDING",
        principal="p",
        submitted_at=time.time(),
        backend="local",
    )
    again = store.get(rec.id)
    assert again == rec and again is not None
    row = store.conn.execute("SELECT * FROM jobs WHERE id=?", (rec.id,)).fetchone()
    assert {k: again[k] for k in again.keys()} == {k: row[k] for k in row.keys()}  # every column, by name
    assert again.spec_get("depends_on") == [1, 2] and again.spec_get("fail_action") == "ignore"
    assert again.spec_get("dependency_timeout", 7) == 7
    small = store.insert_job_record(
        name=None,
        spec='{"command": ["x"]}',
        context="{}",
        state="PENDING",
        principal="p",
        submitted_at=1.0,
        backend="local",
    )
    assert small.spec_get("command") == ["x"] and small.spec_get("command") == small.spec_data()["command"]


def test_the_database_checkpoints_every_checkpoint_pages(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "fd.db")
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == CHECKPOINT_PAGES
    assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == WAL_KEPT_BYTES
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_an_event_starts_no_task_unless_someone_holds_the_changed_condition() -> None:
    async def run() -> None:
        bus = Bus()
        before = len(asyncio.all_tasks())
        bus.fanout(Event(EventKind.JOB_SUBMITTED, data={}, job_id=1))
        assert len(asyncio.all_tasks()) == before  # nobody asked for `changed`: no notify task
        cond = bus.changed
        woke = asyncio.Event()

        async def wait() -> None:
            async with cond:
                await cond.wait()
            woke.set()

        waiter = asyncio.create_task(wait())
        await asyncio.sleep(0)
        bus.fanout(Event(EventKind.JOB_SUBMITTED, data={}, job_id=1))
        await asyncio.wait_for(woke.wait(), 5)
        await waiter

    asyncio.run(run())


class _Row:
    """A row-like object (names, then values in that order), as `sqlite3.Row` and core/ending's adapter are."""

    def __init__(self, cols: dict[str, object]) -> None:
        self.cols = cols

    def keys(self) -> list[str]:
        return list(self.cols)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.cols.values())


def test_a_record_built_through_its_slots_equals_the_constructors(tmp_path: Path) -> None:
    store = JobStore(open_db(tmp_path / "fd.db"))
    rec = store.insert_job_record(
        name="n", spec="{}", context="{}", state="RUNNING", principal="p", submitted_at=2.0, backend="local"
    )
    cols = {k: rec[k] for k in rec.keys()}
    built = JobRecord(**{**{k: getattr(rec, k) for k in cols}, "others": {}})
    assert rec == built and rec.state is JobState.RUNNING and rec.submitting is False
    assert rec.report_pending is EndStage.DONE and rec.priority == 0
    extra = JobRecord.from_row(_Row({**cols, "plugin_column": 7}))
    assert extra.others == {"plugin_column": 7} and extra["plugin_column"] == 7
    older = {k: v for k, v in cols.items() if k not in ("request_id", "array_size", "cancel_requested", "priority")}
    old = JobRecord.from_row(_Row(older))  # a row of an older schema: the defaults
    assert old.request_id is None and old.array_size is None and old.cancel_requested is False and old.priority == 0
    with pytest.raises(TypeError, match="'principal'"):
        JobRecord.from_row(_Row({k: v for k, v in cols.items() if k != "principal"}))
    with pytest.raises(ValueError):
        JobRecord.from_row(_Row({**cols, "state": "BOGUS"}))
    with pytest.raises(AttributeError):
        rec.state = JobState.PENDING  # type: ignore[misc]  # still frozen
