"""The embedded backend's groups of suspended jobs (backends/local/lending.py): who holds which cores, who resumes
when, and what a restart rebuilds from the trials' launch files."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.backends.local.lending import Lend, Lending


def test_a_group_lasts_until_its_last_trial_and_then_resumes_its_victims() -> None:
    lending = Lending()
    group, new = lending.add(Lend("9.1", ("3.1", "2.1"), 1, 400.0), {"3.1": 2, "2.1": 1}, 100.0)
    assert new == ["3.1", "2.1"] and lending.held_cpus() == 3 and group.idle == 2
    joined, again = lending.add(Lend("10.1", ("3.1", "2.1"), 2, 400.0), {"3.1": 2, "2.1": 1}, 120.0)
    assert joined is group and again == [] and group.idle == 0  # a join suspends nobody new
    assert lending.ended("9.1", 200.0) == []  # one trial left on the lent cores
    assert lending.ended("10.1", 250.0) == ["3.1", "2.1"]
    assert lending.held_cpus() == 0 and not lending.of_victim and not lending.of_trial
    assert lending.history["3.1"] == (150.0, 250.0)  # suspended 150 s in all, resumed at 250
    lending.add(Lend("11.1", ("3.1",), 1, 900.0), {"3.1": 2}, 300.0)
    assert lending.ended("11.1", 350.0) == ["3.1"]
    assert lending.history["3.1"] == (200.0, 350.0)
    assert lending.ended("3.1", 400.0) == [] and "3.1" not in lending.history  # the job ended: forgotten


def test_a_victim_that_ends_while_suspended_leaves_its_cores_to_the_group() -> None:
    lending = Lending()
    lending.add(Lend("9.1", ("3.1",), 1, 400.0), {"3.1": 2}, 100.0)
    assert lending.ended("3.1", 150.0) == []  # cancelled while frozen
    assert lending.held_cpus() == 2  # its cores still run the trial until it ends
    assert lending.ended("9.1", 200.0) == []  # nothing left to resume
    assert lending.held_cpus() == 0


def test_a_restart_rebuilds_groups_from_running_trials_and_resumes_the_orphans() -> None:
    before = Lending()
    group, _ = before.add(Lend("9.1", ("3.1",), 1, 400.0), {"3.1": 2}, 100.0)
    record = group.record()
    after = Lending()
    after.restore("9.1", record, 1)  # its trial still runs
    after.restore("10.1", {"victims": ["5.1"], "cpus": 4, "at": 90.0, "until": 300.0}, 2)
    after.ended("10.1", 150.0)  # its trial ended while the gateway was down
    assert after.groups["3.1"].idle == 1 and after.held_cpus() == 2
    lonely = Lending()
    lonely.restore("12.1", {"victims": ["6.1"], "cpus": 2, "at": 50.0, "until": 200.0}, 1)
    lonely.of_trial.pop("12.1")
    lonely.groups["6.1"].trials.clear()  # no running trial holds it after the restart
    assert lonely.orphans(210.0) == ["6.1"] and not lonely.groups
    assert after.orphans(210.0) == []
    assert before.view(frozenset({"3.1"})).frozen == {"3.1"}


@given(
    st.lists(st.tuples(st.sampled_from(["lend", "join", "end_trial", "end_victim"]), st.integers(0, 5)), max_size=40)
)
@settings(max_examples=200, deadline=None)
def test_every_suspension_ends_in_one_resume_and_no_core_stays_held(ops: list[tuple[str, int]]) -> None:
    """Whatever the order of lends, joins and ends: a group's victims still running are resumed when its last
    trial ends (never before), those that ended are not, and once every trial ended no group holds a core."""
    lending = Lending()
    cpus = {f"v{i}": i + 1 for i in range(6)}
    running: set[str] = set(cpus)
    trials: list[str] = []
    now, n = 0.0, 0
    for op, k in ops:
        now += 1.0
        free = sorted(v for v in running if v not in lending.of_victim)
        if op == "lend" and free:
            n += 1
            victims = tuple(free[: 1 + k % 2])
            _, new = lending.add(Lend(f"t{n}", victims, 1, now + 100), cpus, now)
            assert new == list(victims)
            trials.append(f"t{n}")
        elif op == "join" and lending.groups:
            group = list(lending.groups.values())[k % len(lending.groups)]
            n += 1
            _, new = lending.add(Lend(f"t{n}", group.victims, 1, group.until), cpus, now)
            assert new == []
            trials.append(f"t{n}")
        elif op == "end_trial" and trials:
            trial = trials.pop(k % len(trials))
            group = lending.of_trial[trial]
            last = len(group.trials) == 1
            assert lending.ended(trial, now) == ([v for v in group.victims if v in running] if last else [])
        elif op == "end_victim" and running:
            victim = sorted(running)[k % len(running)]
            running.discard(victim)
            assert lending.ended(victim, now) == []
        assert lending.held_cpus() == sum(g.cpus for g in lending.groups.values())
    for trial in trials:
        lending.ended(trial, now + 1)
    assert lending.held_cpus() == 0 and not lending.groups and not lending.of_victim and not lending.of_trial


def test_a_join_past_the_groups_end_asks_its_victims_again_and_a_restart_keeps_the_latest_end() -> None:
    lending = Lending()
    group, asks = lending.add(Lend("9.1", ("3.1", "2.1"), 1, 400.0), {"3.1": 2, "2.1": 1}, 100.0)
    assert asks == ["3.1", "2.1"]
    lending.ended("2.1", 150.0)  # ended while suspended: nothing to ask it
    _, asks = lending.add(Lend("10.1", ("3.1", "2.1"), 1, 500.0), {}, 160.0)
    assert asks == ["3.1"] and group.until == 500.0
    after = Lending()
    after.restore("9.1", {"victims": ["3.1", "2.1"], "cpus": 3, "at": 100.0, "until": 400.0}, 1)
    after.restore("10.1", group.record(), 1)
    assert after.groups["3.1"].until == 500.0
