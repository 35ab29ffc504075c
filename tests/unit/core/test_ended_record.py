"""`ending.ended_record`: the record a job's report is built from, before its one commit, is the record the
row reads as once the end's columns are stored (converted as a read converts them: state, REAL columns,
flags, the end's stage); only the changed columns are converted, so it is compared here with the real thing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontdesk.core.ending import ended_record
from frontdesk.jobs.record import EndStage, JobRecord
from frontdesk.jobs.state import JobState
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore

_TIMES = st.one_of(st.none(), st.integers(0, 2**40), st.floats(0, 2e9, allow_nan=False))
_TEXT = st.one_of(st.none(), st.text(max_size=20))
_CHANGES = st.fixed_dictionaries(
    {
        "state": st.sampled_from([s.value for s in JobState]),
        "report_pending": st.sampled_from([int(e) for e in EndStage]),
    },
    optional={
        "reason": _TEXT,
        "ended_at": _TIMES,
        "started_at": _TIMES,
        "exit_code": st.one_of(st.none(), st.integers(-255, 255)),
        "signal": st.one_of(st.none(), st.integers(0, 64)),
        "usage": _TEXT,
        "stdout_path": _TEXT,
        "stderr_path": _TEXT,
        "attempt": st.integers(1, 9),
        "cancel_requested": st.sampled_from([0, 1, True, False]),
        "priority": st.integers(-1000, 1000),
    },
)


def _job(store: JobStore) -> JobRecord:
    return store.insert_job_record(
        name="n",
        spec=json.dumps({"command": ["true"]}),
        context="{}",
        state="RUNNING",
        principal="p",
        submitted_at=time.time(),
        backend="local",
        idempotency_key="k",
        started_at=12,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=_CHANGES)
def test_the_record_before_the_commit_is_the_row_read_after_it(tmp_path: Path, changes: dict[str, Any]) -> None:
    store = JobStore(open_db(tmp_path / "fd.db"))
    try:
        rec = _job(store)
        before = ended_record(rec, changes)
        store.update_job(rec.id, **changes)
        after = store.get(rec.id)
        assert before == after
        assert [type(getattr(before, f)) for f in ("state", "report_pending", "ended_at", "started_at")] == [
            type(getattr(after, f)) for f in ("state", "report_pending", "ended_at", "started_at")
        ]
    finally:
        store.conn.close()
        (tmp_path / "fd.db").unlink()


def test_another_components_column_is_read_back_whole(tmp_path: Path) -> None:
    store = JobStore(open_db(tmp_path / "fd.db"))
    rec = _job(store)
    store.conn.execute("ALTER TABLE jobs ADD COLUMN site_note TEXT")
    rec = store.get(rec.id)
    assert rec is not None
    before = ended_record(rec, {"state": "COMPLETED", "site_note": "x", "ended_at": 5})
    store.update_job(rec.id, state="COMPLETED", site_note="x", ended_at=5)
    assert before == store.get(rec.id) and before.others == {"site_note": "x"} and before.ended_at == 5.0
