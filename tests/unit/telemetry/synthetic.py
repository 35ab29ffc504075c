"""A synthetic week of a login node and its gateway, drawn to known marginals (MARGINALS), written to a real
observe file (ObserveStore) and a real gateway journal (store.db.open_db). Seeded: the same files each run.

The marginals are this generator's parameters, shaped like the paper's findings (agents submit more, shorter,
more often cancelled jobs and query the scheduler more); they are not the paper's published numbers.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from frontdesk.store.db import open_db
from frontdesk.telemetry.attribution import Actor, Harness
from frontdesk.telemetry.classify import CommandClass as C
from frontdesk.telemetry.sampler import ProcessRecord, SamplerStats
from frontdesk.telemetry.store import ObserveStore

WEEK_S = 7 * 24 * 3600.0
T0 = 1_800_000_000.0


@dataclass(frozen=True)
class Side:
    """What one side (agents or people) does, per user and per job."""

    users: int
    uid0: int
    jobs_per_user: float
    cancel_p: float
    sub_minute_p: float
    cpus: tuple[int, int]
    queries_per_job: float
    file_tools_per_job: float
    tree_walks_per_user: float
    destructive_per_user: float
    fetches_per_user: float

    def mean_runtime(self) -> float:
        """Sub-minute jobs last U(5, 59) s, the others U(120, 3600) s."""
        return self.sub_minute_p * 32 + (1 - self.sub_minute_p) * 1860

    def mean_cpu_hours(self) -> float:
        """Expected CPU hours of one job."""
        return sum(self.cpus) / 2 * self.mean_runtime() / 3600


MARGINALS = {
    Actor.AGENT: Side(30, 4_100_000, 40, 0.25, 0.45, (1, 4), 6, 3, 12, 0.5, 2),
    Actor.PERSON: Side(70, 4_200_000, 8, 0.05, 0.10, (4, 16), 1.5, 0.2, 2, 0.1, 0.5),
}


def poisson(rng: random.Random, lam: float) -> int:
    """Knuth's method (lam stays small here)."""
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _proc(uid: int, pid: int, at: float, actor: Actor, argv: str, classes: tuple[C, ...]) -> ProcessRecord:
    harness = Harness.CLAUDE_CODE if actor is Actor.AGENT else None
    return ProcessRecord(
        "synth", pid, 1, at, at, uid, 0, argv.split()[0], argv, "/home", (), actor, harness, tuple(sorted(classes))
    )


_PER_JOB = ((C.SCHED_QUERY, "squeue --me"), (C.FILE_READ, "cat train.py"))
_PER_USER = ((C.TREE_WALK, "find . -name x"), (C.DESTRUCTIVE, "rm -rf build"), (C.FETCH, "curl -O https://x"))


def generate(observe_path: Path, journal_path: Path, seed: int = 16) -> None:
    """Write both files."""
    rng = random.Random(seed)
    procs: list[ProcessRecord] = []
    jobs: list[tuple[str, str, str, str, float, float, float]] = []
    for actor, side in MARGINALS.items():
        for u in range(side.users):
            uid = side.uid0 + u
            rates = (side.queries_per_job, side.file_tools_per_job)
            for j in range(poisson(rng, side.jobs_per_user)):
                at = T0 + rng.uniform(0, WEEK_S - 4000)
                short = rng.random() < side.sub_minute_p
                runtime = rng.uniform(5, 59) if short else rng.uniform(120, 3600)
                state = "CANCELLED" if rng.random() < side.cancel_p else "COMPLETED"
                in_context = actor is Actor.AGENT and j % 2 == 0  # the other half is joined from observe
                ctx = {"harness": "claude-code"} if in_context else {}
                spec = {"command": ["python", "train.py"], "cpus": rng.randint(*side.cpus)}
                jobs.append((f"uid:{uid}", json.dumps(spec), json.dumps(ctx), state, at, at + 2, at + 2 + runtime))
                procs.append(_proc(uid, len(procs) + 100, at - 1, actor, "sbatch job.sh", (C.SCHED_SUBMIT,)))
                for (kind, argv), rate in zip(_PER_JOB, rates, strict=True):
                    for _ in range(poisson(rng, rate)):
                        procs.append(_proc(uid, len(procs) + 100, at + rng.uniform(3, 3000), actor, argv, (kind,)))
            per_user = (side.tree_walks_per_user, side.destructive_per_user, side.fetches_per_user)
            for (kind, argv), rate in zip(_PER_USER, per_user, strict=True):
                for _ in range(poisson(rng, rate)):
                    procs.append(_proc(uid, len(procs) + 100, T0 + rng.uniform(0, WEEK_S), actor, argv, (kind,)))
    store = ObserveStore(observe_path)
    run = store.start_run("synth", T0, 5.0)
    store.add(procs)
    store.end_run(run, T0 + WEEK_S, SamplerStats(ticks=int(WEEK_S * 5), recorded=len(procs)), 0.0)
    store.close()
    db = open_db(journal_path)
    db.executemany(
        "INSERT INTO jobs (principal, spec, context, state, backend, submitted_at, started_at, ended_at) "
        "VALUES (?, ?, ?, ?, 'local', ?, ?, ?)",
        jobs,
    )
    db.close()
