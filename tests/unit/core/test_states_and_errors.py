"""Job states, the dependency state machine and the error tree's mappings."""

from __future__ import annotations

import pytest

from frontdesk.backends.base import TERMINAL_STATES, JobState
from frontdesk.errors import (
    BackendError,
    CommandFailed,
    Conflict,
    Denied,
    FrontdeskError,
    GatewayUnavailable,
    NotFound,
    SpecError,
    UserError,
    WaitTimeout,
    from_payload,
)
from frontdesk.jobs.lifecycle import dependency_verdict


def test_terminal_states_are_exactly_the_end_states() -> None:
    assert {s for s in JobState if s.terminal} == TERMINAL_STATES
    assert JobState.PENDING not in TERMINAL_STATES and JobState.RUNNING not in TERMINAL_STATES
    assert JobState.SUSPENDED not in TERMINAL_STATES
    assert all(s.value == s.name for s in JobState)  # Slurm's spelling, one vocabulary


@pytest.mark.parametrize(
    ("states", "action", "verdict"),
    [
        ([], "abort", "ready"),
        (["COMPLETED", "COMPLETED"], "abort", "ready"),
        (["COMPLETED", "RUNNING"], "abort", "wait"),
        (["PENDING"], "continue", "wait"),
        (["FAILED"], "abort", "never"),
        (["TIMEOUT", "COMPLETED"], "abort", "never"),
        (["FAILED"], "continue", "ready"),
        (["CANCELLED", "OUT_OF_MEMORY"], "continue", "ready"),
        (["DEPENDENCY_NEVER_SATISFIED"], "abort", "never"),
    ],
)
def test_dependency_verdict(states: list[str], action: str, verdict: str) -> None:
    assert dependency_verdict([JobState(s) for s in states], action) == verdict


def test_missing_dependency_never_satisfied() -> None:
    assert dependency_verdict([None], "continue") == "never"


@pytest.mark.parametrize(
    ("cls", "exit_code", "http"),
    [
        (FrontdeskError, 1, 500),
        (UserError, 2, 400),
        (SpecError, 2, 422),
        (Denied, 2, 403),
        (NotFound, 3, 404),
        (Conflict, 4, 409),
        (GatewayUnavailable, 69, 503),
        (WaitTimeout, 124, 408),
        (BackendError, 70, 502),
    ],
)
def test_error_codes(cls: type[FrontdeskError], exit_code: int, http: int) -> None:
    err = cls("something  went\nwrong", field="x")
    assert (err.exit_code, err.http_status) == (exit_code, http)
    assert err.message == "something went wrong"
    back = from_payload(err.to_payload())
    assert type(back) is cls and back.message == err.message and back.fields == {"field": "x"}


def test_command_failed_carries_argv_code_and_stderr() -> None:
    err = CommandFailed(["sbatch", "--parsable", "x"], 1, "line one\nsbatch: error: Invalid partition\n")
    assert err.argv == ["sbatch", "--parsable", "x"] and err.returncode == 1
    assert "Invalid partition" in err.message and isinstance(err, BackendError)
