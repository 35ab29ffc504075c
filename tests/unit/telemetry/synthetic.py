"""A synthetic week of a login node and its gateway, drawn to known marginals (MARGINALS), written to a real
observe file (ObserveStore), a real gateway journal (store.db.open_db) and, optionally, Slurm accounting text
(`sacct -P` lines). Seeded: the same files each run.

Jobs come in experiment loops (a burst of submissions `loop_gap_s` apart on average, one loop per slot of the
week so loops never run into each other); half of an agent's loops carry its harness and
one of its sessions (the others are found by the join). `generate` returns
the `Truth` it drew (loop gaps, cancel delays, session spans, repeated failures, secrets) so a test can check
that `analyze` finds exactly what was generated.

The marginals are this generator's parameters, shaped like the paper's findings (agents submit more, shorter,
more often cancelled jobs and query the scheduler more); they are not the paper's published numbers.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
from dataclasses import dataclass, field
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
    test_p: float = 0.0
    loop_len: int = 4
    loop_gap_s: float = 600.0
    fail_p: float = 0.1
    repeat_p: float = 0.5
    sessions_per_user: int = 0
    secret_p: float = 0.0

    def mean_runtime(self) -> float:
        """Sub-minute jobs last U(5, 59) s, the others U(120, 3600) s."""
        return self.sub_minute_p * 32 + (1 - self.sub_minute_p) * 1860

    def mean_cpu_hours(self) -> float:
        """Expected CPU hours of one job."""
        return sum(self.cpus) / 2 * self.mean_runtime() / 3600


MARGINALS = {
    Actor.AGENT: Side(30, 4_100_000, 40, 0.25, 0.45, (1, 4), 6, 3, 12, 0.5, 2, 0.3, 5, 420, 0.2, 0.6, 2, 0.3),
    Actor.PERSON: Side(70, 4_200_000, 8, 0.05, 0.10, (4, 16), 1.5, 0.2, 2, 0.1, 0.5, 0.05, 2, 2400, 0.1, 0.3, 0, 0.05),
}


@dataclass
class Truth:
    """What the generator drew, per side, to compare `analyze` with."""

    loop_gaps: list[float] = field(default_factory=list)
    cancel_delays: list[float] = field(default_factory=list)
    session_spans_h: list[float] = field(default_factory=list)
    test_jobs: int = 0
    jobs: int = 0
    repeated_failures: int = 0
    secrets: set[str] = field(default_factory=set)
    secret_users: set[int] = field(default_factory=set)

    def median(self, values: list[float]) -> float:
        return round(statistics.median(values), 1) if values else 0.0


def _sacct_time(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(at))


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


def _submit_times(rng: random.Random, side: Side, n: int, truth: Truth) -> list[tuple[float, int]]:
    """(time, loop number) of n submissions: loops of `loop_len`, one per slot of the week."""
    loops = max(1, math.ceil(n / side.loop_len))
    slot = (WEEK_S - 8000) / loops
    out: list[tuple[float, int]] = []
    for k in range(loops):
        at = T0 + k * slot + rng.uniform(0, slot / 4)
        for i in range(min(side.loop_len, n - len(out))):
            if i:
                gap = rng.expovariate(1 / side.loop_gap_s)
                at += gap
                truth.loop_gaps.append(gap) if gap <= 7200 else None
            out.append((at, k))
    return out


def generate(
    observe_path: Path, journal_path: Path, seed: int = 16, sacct_path: Path | None = None
) -> dict[Actor, Truth]:
    """Write the files; with `sacct_path`, half of the people's jobs are only in Slurm's accounting and a third of
    the agents' are in both (run on Slurm through frontdesk)."""
    rng = random.Random(seed)
    procs: list[ProcessRecord] = []
    jobs: list[tuple[object, ...]] = []
    sacct: list[str] = []
    truths = {a: Truth() for a in MARGINALS}
    slurm_id = 5000
    for actor, side in MARGINALS.items():
        truth = truths[actor]
        for u in range(side.users):
            uid = side.uid0 + u
            rates = (side.queries_per_job, side.file_tools_per_job)
            n = poisson(rng, side.jobs_per_user)
            failed: list[str] = []
            spans: dict[int, list[float]] = {}
            for j, (at, loop) in enumerate(_submit_times(rng, side, n, truth)):
                short = rng.random() < side.sub_minute_p
                runtime = rng.uniform(5, 59) if short else rng.uniform(120, 3600)
                state = "CANCELLED" if rng.random() < side.cancel_p else "COMPLETED"
                partition = "test" if rng.random() < side.test_p else "batch"
                name, report = f"exp{u}-{j}", None
                if state == "COMPLETED" and rng.random() < side.fail_p:
                    state = "OUT_OF_MEMORY"
                    if failed and rng.random() < side.repeat_p:
                        name = rng.choice(failed)
                        truth.repeated_failures += 1
                    failed.append(name)
                    report = json.dumps({"classification": {"kind": "host_oom"}})
                # Half of an agent's loops carry their harness and session; the other half are found by the join.
                in_context = actor is Actor.AGENT and loop % 2 == 0
                session = None
                if in_context and side.sessions_per_user:
                    number = (loop // 2) % side.sessions_per_user
                    session = f"s-{uid}-{number}"
                    spans.setdefault(number, []).append(at)
                ctx = {"harness": "claude-code", "session": session} if in_context else {}
                spec = {"command": ["python", "train.py"], "cpus": rng.randint(*side.cpus)}
                end = at + 2 + runtime
                truth.jobs += 1
                truth.test_jobs += partition == "test"
                if state == "CANCELLED":
                    truth.cancel_delays.append(end - at)
                on_slurm = sacct_path is not None and (
                    (actor is Actor.PERSON and j % 2 == 1) or (actor is Actor.AGENT and j % 3 == 0)
                )
                if on_slurm:
                    slurm_id += 1
                    sacct.append(
                        "|".join((str(slurm_id), f"uid:{uid}", state if state != "CANCELLED" else "CANCELLED by 0",
                                  _sacct_time(at), _sacct_time(at + 2), _sacct_time(end), partition,
                                  str(spec["cpus"]), f"cpu={spec['cpus']},mem=4G,node=1", name))
                    )  # fmt: skip
                if not on_slurm or actor is Actor.AGENT:
                    backend, bid = ("slurm", str(slurm_id)) if on_slurm else ("local", None)
                    jobs.append((f"uid:{uid}", json.dumps(spec), json.dumps(ctx), state, at, at + 2, end, name,
                                 partition, session if in_context else None, report, backend, bid))  # fmt: skip
                procs.append(_proc(uid, len(procs) + 100, at - 1, actor, "sbatch job.sh", (C.SCHED_SUBMIT,)))
                for (kind, argv), rate in zip(_PER_JOB, rates, strict=True):
                    for _ in range(poisson(rng, rate)):
                        procs.append(_proc(uid, len(procs) + 100, at + rng.uniform(3, 3000), actor, argv, (kind,)))
            truth.session_spans_h += [(max(t) - min(t)) / 3600 for t in spans.values()]
            secret = f"{uid:08x}" if rng.random() < side.secret_p else None
            per_user = (side.tree_walks_per_user, side.destructive_per_user, side.fetches_per_user)
            for (kind, argv), rate in zip(_PER_USER, per_user, strict=True):
                for _ in range(poisson(rng, rate)):
                    if kind is C.FETCH and secret:
                        argv = f"curl -H 'Authorization: Bearer «redacted:github-token:{secret}»' -O https://x"
                        truth.secrets.add(secret)
                        truth.secret_users.add(uid)
                    procs.append(_proc(uid, len(procs) + 100, T0 + rng.uniform(0, WEEK_S), actor, argv, (kind,)))
    store = ObserveStore(observe_path)
    run = store.start_run("synth", T0, 5.0)
    store.add(procs)
    store.end_run(run, T0 + WEEK_S, SamplerStats(ticks=int(WEEK_S * 5), recorded=len(procs)), 0.0)
    store.close()
    db = open_db(journal_path)
    db.executemany(
        "INSERT INTO jobs (principal, spec, context, state, backend, submitted_at, started_at, ended_at, name,"
        " partition, session, report, backend_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*row[:4], row[11], *row[4:11], row[12]) for row in jobs],
    )
    db.close()
    if sacct_path is not None:
        sacct_path.write_text("\n".join([*sacct, "5000.batch|uid:1|COMPLETED|x|x|x|batch|1||batch", ""]))
    return truths
