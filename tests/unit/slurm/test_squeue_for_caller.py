"""The polling shield's view per caller (backends/slurm/plugin.for_caller, parse_private_data): pure, no gateway."""

from __future__ import annotations

from typing import Any

from frontdesk.backends.slurm.plugin import OTHERS_HIDDEN, for_caller, parse_private_data
from frontdesk.identity import Caller, Via


def _row(job: str, user: str) -> dict[str, str]:
    return {
        "JobId": job,
        "JobName": f"{user}-job",
        "UserId": f"{user}(100{len(user)})",
        "JobState": "RUNNING",
        "Command": f"/var/lib/frontdesk/{user}/job.sh --secret-flag",
        "WorkDir": f"/home/{user}/project",
        "StdOut": f"/home/{user}/out.log",
        "StdErr": f"/home/{user}/err.log",
        "Comment": "frontdesk:7",
    }


VIEW: dict[str, Any] = {
    "as_of": 1.0,
    "jobs": [_row("11", "alice"), _row("12", "bob")],
    "frontdesk": {"11": 1, "12": 2},
    "history": [
        {"id": 3, "backend_id": "9", "principal": "alice", "name": "train"},
        {"id": 4, "backend_id": "10", "principal": "bob", "name": "bobs"},
    ],
    "usage": {"9": {"peak_bytes": 1}, "10": {"peak_bytes": 2}, "11": {"peak_bytes": 3}},
}


def _caller(user: str, admin: bool = False) -> Caller:
    return Caller(user=user, uid=1000, gid=1000, via=Via.UNIX, admin=admin)


def test_a_user_sees_its_own_jobs_whole_and_others_as_squeue_without_paths_or_command() -> None:
    seen = for_caller(VIEW, _caller("bob"), frozenset())
    own, other = (next(r for r in seen["jobs"] if r["JobId"] == j) for j in ("12", "11"))
    assert own == _row("12", "bob")
    assert other == {k: v for k, v in _row("11", "alice").items() if k not in OTHERS_HIDDEN}
    assert {"JobName", "UserId", "JobState"} <= set(other)
    assert seen["frontdesk"] == {"12": 2}
    assert seen["history"] == [VIEW["history"][1]]
    assert seen["usage"] == {"10": {"peak_bytes": 2}}
    assert "--secret-flag" not in repr({k: v for k, v in seen.items() if k != "jobs"} | {"jobs": [other]})


def test_private_data_jobs_hides_others_jobs_entirely() -> None:
    seen = for_caller(VIEW, _caller("carol"), frozenset({"jobs"}))
    assert seen["jobs"] == [] and seen["frontdesk"] == {} and seen["history"] == [] and seen["usage"] == {}


def test_admins_and_in_process_callers_see_everything() -> None:
    assert for_caller(VIEW, _caller("ops", admin=True), frozenset({"jobs"})) == VIEW
    assert for_caller(VIEW, None, frozenset({"jobs"})) == VIEW


def test_a_view_without_history_stays_without() -> None:
    view = {k: v for k, v in VIEW.items() if k not in ("history", "usage")}
    assert set(for_caller(view, _caller("bob"), frozenset())) == set(view)


def test_private_data_from_scontrol_show_config_and_from_a_setting() -> None:
    assert parse_private_data("JobCredentialPrivateKey = (null)\nPrivateData             = none\n") == frozenset()
    assert parse_private_data("PrivateData             = jobs,usage,users\n") == {"jobs", "usage", "users"}
    assert parse_private_data("SlurmUser = root(0)\n") == {"jobs"}  # unknowable: private
    assert parse_private_data("jobs") == {"jobs"} and parse_private_data("none") == frozenset()
