"""The embedded backend's groups of suspended jobs (backends/local/lending.py): who holds which cores, who resumes
when, and what a restart rebuilds from the trials' launch files."""

from __future__ import annotations

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
