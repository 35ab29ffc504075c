"""`lifecycle.step` under random event sequences (a hypothesis state machine over a model backend).

Jobs with random dependencies, retries and outcomes; launches that land late or fail; cancels at any
moment, including while a launch is in flight; backend answers in any order. Invariants: no job ends
twice, no attempt runs twice and no two attempts of a job run at once, a cancel asked while a launch is
in flight always wins (the job ends CANCELLED and the landed attempt is killed), and once the world is
drained every job (dependents included) has ended.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from frontdesk.backends.base import BackendStatus
from frontdesk.jobs.lifecycle import (
    Action,
    BackendSaid,
    CancelAsked,
    DepsSeen,
    Launched,
    LaunchFailed,
    Launching,
    LaunchLost,
    Signal,
    step,
)
from frontdesk.jobs.record import EndStage, JobRecord, Scalar
from frontdesk.jobs.state import JobState
from report_helpers import job_record


def new_record(job_id: int, spec: dict[str, Any]) -> JobRecord:
    return job_record(id=job_id, spec=spec, state=JobState.PENDING, reason="Queued", backend="model", principal="p",
                      submitted_at=0.0)  # fmt: skip


def apply(rec: JobRecord, changes: dict[str, Scalar]) -> JobRecord:
    typed: dict[str, Any] = dict(changes)
    if "state" in typed:
        typed["state"] = JobState(typed["state"])
    for flag in ("submitting", "cancel_requested"):
        if flag in typed:
            typed[flag] = bool(typed[flag])
    if "report_pending" in typed:
        typed["report_pending"] = EndStage(int(typed["report_pending"]))
    return replace(rec, **typed)


@dataclass
class Attempt:
    """One attempt on the model backend."""

    job_id: int
    attempt: int
    state: JobState = JobState.PENDING
    outcome: JobState = JobState.COMPLETED
    ran: int = 0


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.jobs: dict[int, JobRecord] = {}
        self.backend: dict[str, Attempt] = {}
        self.in_flight: dict[int, str] = {}  # job -> backend id its launch will get
        self.ends: dict[int, int] = {}
        self.cancel_in_flight: set[int] = set()
        self.now = 1.0
        self.next_bid = 0

    @initialize()
    def start(self) -> None:
        self.now = 1.0

    # -- the gateway's side: apply a step exactly as the gateway does ---------------------------------
    def signal(self, job_id: int, sig: Signal) -> None:
        rec = self.jobs[job_id]
        done = step(rec, sig, self.now)
        rec = apply(rec, dict(done.changes))
        self.jobs[job_id] = rec
        bid = sig.backend_id if isinstance(sig, Launched) else rec.backend_id
        if done.action is Action.FINISH:
            assert rec.terminal and rec.report_pending is EndStage.STATE_STORED
            self.ends[job_id] = self.ends.get(job_id, 0) + 1
            self.jobs[job_id] = replace(rec, report_pending=EndStage.DONE, report="{}")
        elif done.action is Action.CANCEL_BACKEND and bid is not None:
            att = self.backend[bid]
            if not att.state.terminal:
                att.state = JobState.CANCELLED
        elif done.action is Action.DISPATCH:
            self.dispatch(job_id)

    def dispatch(self, job_id: int) -> None:
        self.signal(job_id, Launching())
        rec = self.jobs[job_id]
        assert rec.submitting
        assert not any(not a.state.terminal for a in self.backend.values() if a.job_id == job_id)
        self.next_bid += 1
        self.in_flight[job_id] = str(self.next_bid)

    # -- rules ------------------------------------------------------------------------------------------
    @rule(
        deps=st.lists(st.integers(0, 30), max_size=3),
        retries=st.integers(0, 2),
        fail_action=st.sampled_from(["abort", "continue"]),
    )
    def submit(self, deps: list[int], retries: int, fail_action: str) -> None:
        job_id = len(self.jobs) + 1
        depends = sorted({d for d in deps if d in self.jobs})
        spec = {"depends_on": depends, "retry": {"on": ["FAILED"], "count": retries}, "fail_action": fail_action}
        self.jobs[job_id] = new_record(job_id, spec)
        self.tick()

    @rule()
    def tick(self) -> None:
        self.now += 1.0
        for job_id, rec in list(self.jobs.items()):
            if rec.state == JobState.PENDING and rec.backend_id is None and not rec.submitting:
                ids = tuple(int(d) for d in rec.spec_data()["depends_on"])
                self.signal(job_id, DepsSeen(tuple(self.jobs[d].state for d in ids), ids))

    @precondition(lambda self: bool(self.in_flight))
    @rule(
        data=st.data(),
        fails=st.sampled_from(["no", "refused", "disk full"]),
        outcome=st.sampled_from([JobState.COMPLETED, JobState.FAILED]),
    )
    def launch_lands(self, data: st.DataObject, fails: str, outcome: JobState) -> None:
        job_id = data.draw(st.sampled_from(sorted(self.in_flight)))
        bid = self.in_flight.pop(job_id)
        if fails != "no":
            self.signal(job_id, LaunchFailed(fails, transient=fails == "disk full"))
            return
        self.backend[bid] = Attempt(job_id, self.jobs[job_id].attempt, outcome=outcome)
        self.signal(job_id, Launched(bid))

    @precondition(lambda self: bool(self.in_flight))
    @rule(data=st.data())
    def gateway_crash_loses_a_launch(self, data: st.DataObject) -> None:
        # killed between "submitting" and the backend's answer; on start the backend does not know the attempt
        job_id = data.draw(st.sampled_from(sorted(self.in_flight)))
        del self.in_flight[job_id]
        self.signal(job_id, LaunchLost())

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from(sorted(self.jobs)))
        if self.jobs[job_id].terminal:
            return  # the gateway answers Conflict before stepping
        if job_id in self.in_flight:
            self.cancel_in_flight.add(job_id)
        self.signal(job_id, CancelAsked())

    @precondition(lambda self: any(not a.state.terminal for a in self.backend.values()))
    @rule(data=st.data())
    def backend_moves(self, data: st.DataObject) -> None:
        live = sorted(b for b, a in self.backend.items() if not a.state.terminal)
        att = self.backend[data.draw(st.sampled_from(live))]
        if att.state == JobState.PENDING:
            att.state = JobState.RUNNING
            att.ran += 1
        else:
            att.state = att.outcome

    @precondition(lambda self: bool(self.backend))
    @rule(data=st.data())
    def backend_answers(self, data: st.DataObject) -> None:
        bid = data.draw(st.sampled_from(sorted(self.backend)))
        att = self.backend[bid]
        rec = self.jobs[att.job_id]
        if rec.backend_id != bid:
            return  # the gateway only queries the current attempt's id
        status = BackendStatus(backend_id=bid, state=att.state, exit_code=0 if att.state == JobState.COMPLETED else 1)
        self.signal(att.job_id, BackendSaid(status))

    # -- invariants ---------------------------------------------------------------------------------------
    @invariant()
    def no_job_ends_twice(self) -> None:
        assert all(n <= 1 for n in self.ends.values()), self.ends
        assert all(self.jobs[j].terminal for j in self.ends)

    @invariant()
    def no_attempt_runs_twice_nor_two_at_once(self) -> None:
        assert all(a.ran <= 1 for a in self.backend.values())
        live: dict[int, int] = {}
        for a in self.backend.values():
            if not a.state.terminal:
                live[a.job_id] = live.get(a.job_id, 0) + 1
        assert all(n <= 1 for n in live.values()), live

    @invariant()
    def attempts_stay_within_the_retry_count(self) -> None:
        for rec in self.jobs.values():
            assert rec.attempt <= rec.spec_data()["retry"]["count"] + 1

    @invariant()
    def only_the_current_attempt_of_a_live_job_runs(self) -> None:
        for bid, att in self.backend.items():
            if not att.state.terminal:
                rec = self.jobs[att.job_id]
                assert not rec.terminal and rec.backend_id == bid, (bid, att, rec.state, rec.backend_id)

    def teardown(self) -> None:
        for _ in range(200):  # drain: every launch lands, every attempt ends, the gateway hears of it
            if self.in_flight:
                job_id, bid = next(iter(self.in_flight.items()))
                del self.in_flight[job_id]
                self.backend[bid] = Attempt(job_id, self.jobs[job_id].attempt)
                self.signal(job_id, Launched(bid))
            for bid, att in list(self.backend.items()):
                att.state = att.outcome if not att.state.terminal else att.state
                if self.jobs[att.job_id].backend_id == bid:
                    self.signal(att.job_id, BackendSaid(BackendStatus(backend_id=bid, state=att.state)))
            self.tick()
            if all(r.terminal for r in self.jobs.values()) and not self.in_flight:
                break
        assert all(r.terminal for r in self.jobs.values()), {j: r.state for j, r in self.jobs.items()}
        assert all(self.ends.get(j) == 1 for j in self.jobs), self.ends
        for job_id in self.cancel_in_flight:
            assert self.jobs[job_id].state == JobState.CANCELLED, (job_id, self.jobs[job_id])
        assert all(a.state.terminal for a in self.backend.values())


Lifecycle.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
TestLifecycle = Lifecycle.TestCase
