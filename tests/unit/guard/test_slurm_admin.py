"""Slurm administration by an agent (sacctmgr changing the accounting database, scontrol changing nodes,
partitions, reservations or the controller) asks, like other site-admin operations; reading, and changing
one's own job, stays allowed (strings only, nothing runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402

ASKED = [
    "sacctmgr -i delete user bob",
    "sacctmgr -i delete user name=bob account=lab",
    "sacctmgr add user bob account=lab",
    "sacctmgr -i modify qos normal set MaxWall=1",
    "SACCTMGR_X=1 sacctmgr -i Remove account lab",
    "scontrol update nodename=node1 state=down reason=x",
    "scontrol update NodeName=node1 State=DRAIN Reason=maint",
    "scontrol update PartitionName=debug State=DOWN",
    "scontrol delete reservation=r1",
    "scontrol delete PartitionName=debug",
    "scontrol create reservation starttime=now duration=60 users=root nodes=ALL",
    "scontrol reconfigure",
    "scontrol -Q shutdown",
    "srun -p debug scontrol reboot node1",
]
ALLOWED = [
    "sacctmgr show assoc",
    "sacctmgr list users",
    "sacctmgr -nP show qos format=name,maxwall",
    "scontrol show node node1",
    "scontrol -o show job 12",
    "scontrol show reservation",
    "scontrol update jobid=12 timelimit=10",
    "scontrol hold 12",
    "scontrol requeue 12",
]


@pytest.mark.parametrize("command", ASKED)
def test_slurm_administration_asks(command: str) -> None:
    verdict = check(command, corpus_context())
    assert (verdict.decision, verdict.rule) == (Decision.ASK, "slurm.admin"), command


@pytest.mark.parametrize("command", ALLOWED)
def test_reading_slurm_or_changing_ones_own_job_is_allowed(command: str) -> None:
    assert check(command, corpus_context()).decision is Decision.ALLOW, command
