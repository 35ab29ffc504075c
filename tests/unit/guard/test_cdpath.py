"""`cd NAME` looks NAME up in CDPATH first (bash): `CDPATH=/ cd home && rm -rf alice` deletes /home/alice, which
the guard read as ./home/alice in the project and allowed. Strings only: every command here is read, never run.
A relative name starting with `.` and an unset CDPATH keep the cwd; an entry not holding the name is skipped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from frontdesk.guard.checker import check
from frontdesk.guard.model import Decision

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))
from corpus_loader import corpus_context  # noqa: E402

CTX = corpus_context()  # HOME=/home/alice, cwd ~/project, workstation


@pytest.mark.parametrize(
    "command",
    [
        "CDPATH=/ cd home && rm -rf alice",
        "export CDPATH=/; cd home; rm -rf alice",
        "CDPATH=/ ; cd home && rm -rf alice",
        "CDPATH=/nonexistent-x:/ cd home && rm -rf alice",
        "CDPATH=/ cd etc && rm -rf ssh",
    ],
)
def test_cd_through_cdpath_is_where_bash_goes(command: str) -> None:
    verdict = check(command, CTX)
    assert verdict.decision is Decision.DENY, (command, verdict)


@pytest.mark.parametrize(
    "command",
    [
        "cd home && rm -rf alice",  # no CDPATH: ./home in the project
        "CDPATH=/ cd ./home && rm -rf alice",  # ./ never searches CDPATH
        "CDPATH=/nonexistent-x cd build && rm -rf out",  # no entry holds it: the cwd's
    ],
)
def test_cd_without_a_cdpath_hit_stays_in_the_project(command: str) -> None:
    verdict = check(command, CTX)
    assert verdict.decision is Decision.ALLOW, (command, verdict)
