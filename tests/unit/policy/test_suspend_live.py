"""The live choice of suspensions (policy/suspend_live.py): the simulator's rules and order over the embedded
backend's running attempts, hand-checked on an 8-core machine."""

from __future__ import annotations

from dataclasses import replace

from frontdesk.backends.local.lending import Group, Lend, Suspensions
from frontdesk.backends.local.scheduling import QueuedJob
from frontdesk.policy.model import JobView, Part
from frontdesk.policy.suspend import TURNAROUND, SuspendRules, Victim, choose_victims
from frontdesk.policy.suspend_live import choose_lends, running_view

NOW = 10_000.0
RULES = SuspendRules()
G = 1024**3


def _running(
    bid: str, cpus: int, started: float, walltime: int = 3600, trial: bool = False
) -> tuple[QueuedJob, JobView]:
    job = QueuedJob(bid, int(bid.split(".")[0]), cpus, G, 0, (), walltime, 0, started - 5, started_at=started)
    view = JobView(bid, "alice", "agent" if trial else "hpc", "local", cpus, G, 0, float(walltime), started - 5)
    return job, view


def _trial(bid: str, cpus: int = 2, walltime: float = 300.0, at: float = NOW - 1, memory: int = G) -> JobView:
    return JobView(bid, "bob", "agent", "local", cpus, memory, 0, walltime, at, trial=True)


RUN = [_running("1.1", 4, 1000.0), _running("2.1", 2, 2000.0), _running("3.1", 2, 3000.0)]
ALL = frozenset(j.backend_id for j, _ in RUN)


def test_the_trial_suspends_the_simulators_choice() -> None:
    lends = choose_lends([_trial("9.1")], RUN, Suspensions(suspendable=ALL), RULES, NOW, 4 * G)
    assert lends == [Lend("9.1", ("3.1",), 2, NOW + 300.0)]  # the narrowest wide enough, most recently started
    victims = [Victim(j.backend_id, "local", (Part("local", j.cpus, 0, 0),), j.started_at or 0, 3600.0) for j, _ in RUN]
    assert [v.id for v in choose_victims(2, "local", 300.0, victims, RULES, NOW)] == ["3.1"]


def test_a_second_trial_joins_the_group_within_its_end_else_suspends_another() -> None:
    waiting = [
        _trial("11.1", cpus=1, walltime=350.0, at=NOW - 1),
        _trial("9.1", cpus=1, at=NOW - 3),
        _trial("10.1", cpus=1, at=NOW - 2),
    ]
    lends = choose_lends(waiting, RUN, Suspensions(suspendable=ALL), RULES, NOW, 8 * G)
    assert lends == [
        Lend("9.1", ("3.1",), 1, NOW + 300.0),  # in arrival order
        Lend("10.1", ("3.1",), 1, NOW + 300.0),  # the group's idle lent core
        Lend("11.1", ("2.1",), 1, NOW + 350.0),  # past the group's end: a group of its own
    ]


def test_only_suspendable_batch_jobs_outside_groups_are_chosen() -> None:
    trial_run = _running("4.1", 2, 3500.0, walltime=300, trial=True)
    run = [*RUN, trial_run]
    every = ALL | {"4.1"}
    sus = Suspensions(frozen=frozenset({"3.1"}), lent=frozenset(), suspendable=every)
    assert choose_lends([_trial("9.1")], run, sus, RULES, NOW, 4 * G) == [Lend("9.1", ("2.1",), 2, NOW + 300.0)]
    assert choose_lends([_trial("9.1")], RUN, Suspensions(suspendable=frozenset({"1.1"})), RULES, NOW, 4 * G) == [
        Lend("9.1", ("1.1",), 2, NOW + 300.0)
    ]
    assert choose_lends([_trial("9.1")], RUN, Suspensions(), RULES, NOW, 4 * G) == []  # launched without a freezer


def test_trials_that_may_not_suspend() -> None:
    sus = Suspensions(suspendable=ALL)
    assert choose_lends([_trial("9.1", walltime=601.0)], RUN, sus, RULES, NOW, 4 * G) == []  # over the trial cap
    assert choose_lends([_trial("9.1", memory=5 * G)], RUN, sus, RULES, NOW, 4 * G) == []  # its memory is not free
    plain = JobView("9.1", "bob", "agent", "local", 2, G, 0, 300.0, NOW - 1)  # not a granted trial
    assert choose_lends([plain], RUN, sus, RULES, NOW, 4 * G) == []
    graced = SuspendRules(grace_s=30.0)
    assert choose_lends([_trial("9.1")], RUN, sus, graced, NOW, 4 * G) == []  # waited 1 s of 30


def test_the_share_and_rest_rules_are_the_simulators() -> None:
    # 3.1 resumed 100 s ago (rest 600 s), 2.1 was suspended 100 s of its 360 s budget (10 % of 1 h): 1.1 is left
    history = {"3.1": (60.0, NOW - 100.0), "2.1": (100.0, NOW - 700.0)}
    sus = Suspensions(history=history, suspendable=ALL)
    assert choose_lends([_trial("9.1")], RUN, sus, RULES, NOW, 4 * G) == [Lend("9.1", ("1.1",), 2, NOW + 300.0)]
    assert choose_lends([_trial("9.1", walltime=200.0)], RUN, sus, RULES, NOW, 4 * G)[0].victims == ("2.1",)


def test_an_open_group_is_joined_and_its_members_seen_as_the_simulator_sees_them() -> None:
    group = Group(("1.1",), 4, NOW - 10.0, NOW + 290.0, {"8.1": 1})
    sus = Suspensions(groups=(group,), lent=frozenset({"8.1"}), frozen=frozenset({"1.1"}), suspendable=ALL)
    run = [*RUN, _running("8.1", 1, NOW - 10.0, walltime=300, trial=True)]
    assert choose_lends([_trial("9.1", walltime=200.0)], run, sus, RULES, NOW, 4 * G) == [
        Lend("9.1", ("1.1",), 2, NOW + 290.0)
    ]
    victim = running_view(run[0][0], run[0][1], "local", sus)
    assert victim.expected_end == 1000.0 + 3600.0 + 300.0  # shifted by the group's expected length
    lent = running_view(run[3][0], run[3][1], "local", sus)
    assert lent.parts[0].cpus == 0 and lent.parts[0].memory_bytes == G  # its memory is its own, its cores are not


def test_the_config_is_off_by_default_and_bad_values_are_refused_whole() -> None:
    import pytest

    from frontdesk.errors import ConfigError
    from frontdesk.policy.config import parse_policy

    assert parse_policy({}).suspend.rules() is None
    on = parse_policy({"suspend": {"enabled": True, "trial_limit": "5m", "rest": "0s"}}).suspend.rules()
    assert on == replace(TURNAROUND, trial_limit_s=300.0, rest_s=0.0)  # the simulated frontdesk-suspend's rules
    for bad, where in (({"max_share": 1.5}, "max_share"), ({"trial_limit": "0s"}, "trial_limit"), ({"x": 1}, "x")):
        with pytest.raises(ConfigError) as exc:
            parse_policy({"suspend": bad})
        assert f"suspend.{where}" in exc.value.message and "\n" not in exc.value.message


def test_turnaround_rules_count_the_wait_extend_a_group_and_fill_its_idle_cores() -> None:
    waited = QueuedJob("5.1", 5, 2, G, 0, (), 1000, 0, 1000.0, started_at=3000.0)  # waited 2000 s, asks 1000 s
    run = [(waited, JobView("5.1", "alice", "hpc", "local", 2, G, 0, 1000.0, 1000.0))]
    sus = Suspensions(suspendable=frozenset({"5.1"}))
    assert choose_lends([_trial("9.1")], run, sus, RULES, NOW, 4 * G) == []  # 300 s > 10 % of 1000 s
    counted = replace(RULES, count_wait=True)  # 10 % of 3000 s
    assert choose_lends([_trial("9.1")], run, sus, counted, NOW, 4 * G) == [Lend("9.1", ("5.1",), 2, NOW + 300.0)]
    group = Group(("1.1",), 4, NOW - 10.0, NOW + 100.0, {"8.1": 1})
    sus = Suspensions(groups=(group,), lent=frozenset({"8.1"}), frozen=frozenset({"1.1"}), suspendable=ALL)
    run = [*RUN, _running("8.1", 1, NOW - 10.0, walltime=110, trial=True)]
    assert choose_lends([_trial("9.1", walltime=200.0)], run, sus, RULES, NOW, 4 * G)[0].victims == ("3.1",)
    extended = choose_lends([_trial("9.1", walltime=200.0)], run, sus, replace(RULES, extend=True), NOW, 4 * G)
    assert extended == [Lend("9.1", ("1.1",), 2, NOW + 200.0)]  # 1.1 suspended 210 s of its 360 s: allowed
    assert choose_lends([_trial("9.1", walltime=355.0)], run, sus, replace(RULES, extend=True), NOW, 4 * G)[
        0
    ].victims == ("3.1",)  # 365 s would pass 1.1's share: a group of its own
    plain = JobView("12.1", "carol", "agent", "local", 2, G, 0, 60.0, NOW - 50)  # no trial, ends in time
    filled = replace(RULES, fill=True, keep_for_trials=1.0)
    assert choose_lends([plain], run, sus, filled, NOW, 4 * G) == [Lend("12.1", ("1.1",), 2, NOW + 100.0)]
    assert choose_lends([plain], run, sus, replace(filled, keep_for_trials=2.0), NOW, 4 * G) == []  # kept idle
    assert choose_lends([plain], run, sus, filled, NOW, G // 2) == []  # its memory is not free
