"""`lifecycle.step`, case by case: the races and the end path named in issues 11 and 12."""

from __future__ import annotations

import json
from dataclasses import replace

from test_lifecycle_machine import apply, new_record

from frontdesk.backends.base import BackendStatus
from frontdesk.jobs.lifecycle import (
    RETRY_LAUNCH_S,
    Action,
    BackendSaid,
    CancelAsked,
    DepsSeen,
    Launched,
    LaunchFailed,
    PrepareFailed,
    step,
)
from frontdesk.jobs.record import EndStage
from frontdesk.jobs.state import JobState


def test_a_cancel_during_a_launch_waits_for_the_id_then_cancels_it() -> None:
    launching = replace(new_record(1, {"depends_on": []}), submitting=True)
    asked = step(launching, CancelAsked(), 10.0)
    assert asked.action is Action.NONE and asked.changes["cancel_requested"] == 1
    assert "state" not in asked.changes  # not CANCELLED yet: the backend may be starting it
    landed = step(replace(launching, cancel_requested=True), Launched("77"), 11.0)
    assert landed.action is Action.CANCEL_BACKEND and landed.changes["backend_id"] == "77"


def test_the_end_stores_the_state_with_a_report_pending_mark() -> None:
    running = replace(new_record(2, {"depends_on": []}), state=JobState.RUNNING, backend_id="5")
    ended = step(running, BackendSaid(BackendStatus(backend_id="5", state=JobState.COMPLETED, exit_code=0)), 20.0)
    assert ended.action is Action.FINISH
    assert ended.changes["state"] == "COMPLETED" and ended.changes["report_pending"] == EndStage.STATE_STORED
    again = step(replace(running, state=JobState.COMPLETED), BackendSaid(BackendStatus("5", JobState.FAILED)), 21.0)
    assert again.action is Action.NONE and not again.changes  # an ended job never ends twice


def test_a_full_disk_postpones_the_launch_instead_of_failing_the_job() -> None:
    waiting = replace(new_record(3, {"depends_on": []}), submitting=True)
    for signal in (PrepareFailed("No space left on device", transient=True), LaunchFailed("ENOSPC", transient=True)):
        done = step(waiting, signal, 30.0)
        assert "state" not in done.changes and done.changes["eligible_at"] == 30.0 + RETRY_LAUNCH_S
        assert str(done.changes["reason"]).startswith("Disk full")
        later = apply(waiting, dict(done.changes))
        assert step(later, DepsSeen((), ()), 30.0 + 1).action is Action.NONE  # not before its time
        assert step(later, DepsSeen((), ()), 30.0 + RETRY_LAUNCH_S).action is Action.DISPATCH
    assert step(waiting, PrepareFailed("bad script"), 30.0).changes["state"] == "FAILED"


def test_a_retry_is_not_taken_after_a_cancel() -> None:
    spec = {"depends_on": [], "retry": {"on": ["FAILED"], "count": 2}}
    running = replace(new_record(4, spec), state=JobState.RUNNING, backend_id="9")
    failed = BackendSaid(BackendStatus(backend_id="9", state=JobState.FAILED, exit_code=1))
    assert step(running, failed, 40.0).changes["attempt"] == 2
    assert step(replace(running, cancel_requested=True), failed, 40.0).changes["state"] == "FAILED"
    assert json.loads(running.spec)["retry"]["count"] == 2
