"""`frontdesk analyze`: the paper's metrics for agents against people, from an observe file and job records.

`load` reads the observe file and the gateway's journal into typed rows (Slurm's `sacct` records join them
through `telemetry/sacct.py`); `compute` is pure over them; `render` draws the table. A job is an agent's when
its submit context names a harness or an agent session, or when the observer saw an agent-attributed
scheduler submission by the same user within `JOIN_WINDOW_S` of its submit time; otherwise it is a person's.

Definitions of the time figures: the experiment loop is the time from one submission to the next one of the
same agent session (a person: the same user) when it comes within `LOOP_WINDOW_S` (submit → inspect/edit →
submit; a longer pause starts a new loop); time to cancel runs from submission to the end of a cancelled
job; a session's age runs from its first to its last submission. A failure signature is the failure kind
(the report's classification, else the end state) with the job's name; a repeat is a failed job whose
signature already failed for the same user. Secrets are the distinct fingerprints the observer's redaction
left in command lines.
"""

from __future__ import annotations

import bisect
import itertools
import json
import pwd
import re
import sqlite3
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from frontdesk.errors import UserError
from frontdesk.jobs.state import JobState
from frontdesk.reports.kinds import FailureKind
from frontdesk.telemetry.attribution import Actor
from frontdesk.telemetry.classify import CommandClass

__all__ = ["ActorMetrics", "Command", "Job", "Metrics", "analyze", "compute", "load", "render"]

JOIN_WINDOW_S = 5.0
LOOP_WINDOW_S = 7200.0
TEST_PARTITIONS = frozenset({"test", "debug", "devel"})
FAILED = frozenset({JobState.FAILED, JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.NODE_FAIL})
_STATE_KINDS: dict[str, str] = {JobState.OUT_OF_MEMORY: FailureKind.HOST_OOM, JobState.TIMEOUT: FailureKind.WALLTIME}
"""A record without a report (Slurm's accounting) is given the kind its end state implies."""
_SECRET = re.compile(r"«redacted:[a-z0-9-]+:([0-9a-f]+)»")
ACTORS = (Actor.AGENT, Actor.PERSON)
C = CommandClass


@dataclass(frozen=True)
class Command:
    """One attributed process from the observe file."""

    user: str
    actor: Actor
    at: float
    classes: frozenset[CommandClass]
    secrets: frozenset[str] = frozenset()
    """Fingerprints of the secrets the observer redacted from this command line."""


@dataclass(frozen=True)
class Job:
    """One job from the gateway's journal."""

    user: str
    agent_context: bool
    state: str
    submitted: float
    started: float | None
    ended: float | None
    cpu_seconds: float
    gpu_seconds: float
    partition: str | None = None
    session: str | None = None
    signature: str | None = None
    """`kind:name` of a failed job, else None."""
    source_id: str | None = field(default=None, compare=False)
    """The scheduler's id (a Slurm job id), so the same job read from two sources counts once."""


@dataclass(frozen=True)
class ActorMetrics:
    """The paper's figures for one side (agents or people)."""

    users: int
    user_share: float
    jobs: int
    job_share: float
    cpu_hours: float
    cpu_share: float
    gpu_hours: float
    commands: int
    commands_per_user_minute: float
    cancel_rate: float
    sub_minute_share: float
    sched_queries_per_job: float
    file_tools_per_100_jobs: float
    tree_walks_per_user: float
    destructive: int
    fetches: int
    fetch_users: int
    experiment_loop_median_s: float
    time_to_cancel_median_s: float
    test_partition_share: float
    session_age_median_h: float
    repeated_failures: int
    secrets_seen: int
    secret_users: int


@dataclass(frozen=True)
class Metrics:
    """Both sides, with the observed time they cover."""

    observed_minutes: float
    agent: ActorMetrics
    person: ActorMetrics

    def to_json(self) -> dict[str, object]:
        """The `--json` form."""
        return {"observed_minutes": self.observed_minutes, "agent": asdict(self.agent), "person": asdict(self.person)}


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid:{uid}"


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise UserError(f"no such database: {path}")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        db.execute("SELECT 1 FROM sqlite_master").fetchall()
    except sqlite3.Error as exc:
        raise UserError(f"{path} is not a SQLite database: {exc}") from exc
    return db


def _commands(db: sqlite3.Connection) -> tuple[list[Command], float]:
    names: dict[int, str] = {}
    out = []
    try:
        rows = db.execute("SELECT uid, actor, seen_at, classes, argv FROM processes").fetchall()
        spans = db.execute("SELECT COALESCE(SUM(ended - started), 0) FROM runs WHERE ended IS NOT NULL").fetchone()
    except sqlite3.Error as exc:
        raise UserError(f"not an observe file (frontdesk observe --out): {exc}") from exc
    for uid, actor, at, classes, argv in rows:
        if actor not in (Actor.AGENT.value, Actor.PERSON.value):
            continue
        user = names.setdefault(uid, _user(uid))
        kinds = frozenset(CommandClass(c) for c in classes.split(",") if c in CommandClass._value2member_map_)
        secrets = frozenset(_SECRET.findall(argv)) if "«redacted:" in (argv or "") else frozenset()
        out.append(Command(user, Actor(actor), float(at), kinds, secrets))
    return out, float(spans[0]) / 60.0


def _jobs(db: sqlite3.Connection) -> list[Job]:
    try:
        rows = db.execute(
            "SELECT principal, context, spec, state, submitted_at, started_at, ended_at, usage, name, partition,"
            " session, report, backend, backend_id FROM jobs"
        ).fetchall()
    except sqlite3.Error as exc:
        raise UserError(f"not a frontdesk journal (frontdesk.db): {exc}") from exc
    out = []
    for principal, context, spec, state, submitted, started, ended, usage, *more in rows:
        ctx, sp, use = _obj(context), _obj(spec), _obj(usage)
        ran = (ended - started) if started is not None and ended is not None else 0.0
        cpu = use.get("cpu_seconds")
        cpus, gpus = sp.get("cpus", 1), sp.get("gpus", 0)
        cpu_s = float(cpu) if isinstance(cpu, int | float) else ran * (cpus if isinstance(cpus, int) else 1)
        gpu_s = ran * (gpus if isinstance(gpus, int) else 0)
        agent = bool(ctx.get("harness") or ctx.get("session"))
        name, partition, session, report, backend, backend_id = more
        session = session or (str(ctx["session"]) if ctx.get("session") else None)
        sig = signature(state, _kind(_obj(report)), name or sp.get("name"))
        source = str(backend_id) if backend == "slurm" and backend_id else None
        out.append(
            Job(principal, agent, state, submitted, started, ended, max(0.0, cpu_s), max(0.0, gpu_s), partition,
                session, sig, source)
        )  # fmt: skip
    return out


def _kind(report: Mapping[str, object]) -> str | None:
    cls = report.get("classification")
    kind = cls.get("kind") if isinstance(cls, dict) else None
    return str(kind) if kind else None


def signature(state: str, kind: str | None, name: object) -> str | None:
    """`kind:name` for a failed job (the end state when no classification), else None."""
    if state not in FAILED:
        return None
    return f"{kind or _STATE_KINDS.get(state) or str(state).lower()}:{name or '?'}"


def _obj(raw: str | None) -> dict[str, object]:
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def window(observe_db: Path) -> tuple[float | None, float | None]:
    """The first start and last end of the observer's runs (what `--sacct run` asks Slurm about)."""
    db = _open(observe_db)
    try:
        first, last = db.execute("SELECT MIN(started), MAX(COALESCE(ended, started)) FROM runs").fetchone()
    except sqlite3.Error as exc:
        raise UserError(f"not an observe file (frontdesk observe --out): {exc}") from exc
    finally:
        db.close()
    return first, last


def load(
    observe_db: Path, journal: Path | None, extra_jobs: Sequence[Job] = ()
) -> tuple[list[Command], list[Job], float]:
    """Commands, jobs and observed minutes from the two files (the journal is optional), plus `extra_jobs`
    (Slurm's records) that the journal does not already hold."""
    db = _open(observe_db)
    try:
        commands, minutes = _commands(db)
    finally:
        db.close()
    jobs: list[Job] = []
    if journal is not None:
        jdb = _open(journal)
        try:
            jobs = _jobs(jdb)
        finally:
            jdb.close()
    known = {j.source_id for j in jobs if j.source_id}
    jobs += [j for j in extra_jobs if not j.source_id or j.source_id not in known]
    return commands, jobs, minutes


def _job_actor(job: Job, agent_submits: Mapping[str, Sequence[float]]) -> Actor:
    if job.agent_context:
        return Actor.AGENT
    times = agent_submits.get(job.user, ())
    i = bisect.bisect_left(times, job.submitted - JOIN_WINDOW_S)
    return Actor.AGENT if i < len(times) and times[i] <= job.submitted + JOIN_WINDOW_S else Actor.PERSON


def _ratio(a: float, b: float) -> float:
    return round(a / b, 4) if b else 0.0


def _median(values: Iterable[float]) -> float:
    got = list(values)
    return round(statistics.median(got), 1) if got else 0.0


def _loops(jobs: Sequence[Job]) -> list[float]:
    by_key: dict[tuple[str, str | None], list[float]] = {}  # a session id is its user's own: (user, id)
    for j in jobs:
        by_key.setdefault((j.user, j.session), []).append(j.submitted)
    gaps = []
    for times in by_key.values():
        times.sort()
        gaps += [b - a for a, b in itertools.pairwise(times) if 0 < b - a <= LOOP_WINDOW_S]
    return gaps


def _session_ages(jobs: Sequence[Job]) -> list[float]:
    spans: dict[tuple[str, str], list[float]] = {}
    for j in jobs:
        if j.session:
            spans.setdefault((j.user, j.session), []).append(j.submitted)
    return [(max(t) - min(t)) / 3600 for t in spans.values()]


def _repeats(jobs: Sequence[Job]) -> int:
    seen: set[tuple[str, str]] = set()
    repeats = 0
    for j in sorted(jobs, key=lambda j: j.submitted):
        if j.signature:
            repeats += (j.user, j.signature) in seen
            seen.add((j.user, j.signature))
    return repeats


def _cancel_delays(jobs: Sequence[Job]) -> list[float]:
    return [j.ended - j.submitted for j in jobs if j.state == JobState.CANCELLED and j.ended and j.ended >= j.submitted]


def _side(
    commands: list[Command], jobs: list[Job], minutes: float, totals: tuple[int, int, float],
    test_partitions: frozenset[str] = TEST_PARTITIONS,
) -> ActorMetrics:  # fmt: skip
    users = {c.user for c in commands} | {j.user for j in jobs}
    ran = [j for j in jobs if j.started is not None and j.ended is not None]

    def count(kind: CommandClass) -> int:
        return sum(1 for c in commands if kind in c.classes)

    cpu_h = sum(j.cpu_seconds for j in jobs) / 3600
    return ActorMetrics(
        users=len(users),
        user_share=_ratio(len(users), totals[0]),
        jobs=len(jobs),
        job_share=_ratio(len(jobs), totals[1]),
        cpu_hours=round(cpu_h, 3),
        cpu_share=_ratio(cpu_h, totals[2]),
        gpu_hours=round(sum(j.gpu_seconds for j in jobs) / 3600, 3),
        commands=len(commands),
        commands_per_user_minute=_ratio(len(commands), minutes * len({c.user for c in commands})),
        cancel_rate=_ratio(sum(1 for j in jobs if j.state == JobState.CANCELLED), len(jobs)),
        sub_minute_share=_ratio(sum(1 for j in ran if (j.ended or 0) - (j.started or 0) < 60), len(ran)),
        sched_queries_per_job=_ratio(count(C.SCHED_QUERY), len(jobs)),
        file_tools_per_100_jobs=_ratio(100 * (count(C.FILE_READ) + count(C.FILE_EDIT)), len(jobs)),
        tree_walks_per_user=_ratio(count(C.TREE_WALK), len(users)),
        destructive=count(C.DESTRUCTIVE),
        fetches=count(C.FETCH),
        fetch_users=len({c.user for c in commands if C.FETCH in c.classes}),
        experiment_loop_median_s=_median(_loops(jobs)),
        time_to_cancel_median_s=_median(_cancel_delays(jobs)),
        test_partition_share=_ratio(sum(1 for j in jobs if (j.partition or "") in test_partitions), len(jobs)),
        session_age_median_h=_median(_session_ages(jobs)),
        repeated_failures=_repeats(jobs),
        secrets_seen=len({s for c in commands for s in c.secrets}),
        secret_users=len({c.user for c in commands if c.secrets}),
    )


def compute(
    commands: Sequence[Command], jobs: Sequence[Job], minutes: float,
    test_partitions: frozenset[str] = TEST_PARTITIONS,
) -> Metrics:  # fmt: skip
    """The metrics for agents and people (pure)."""
    submits: dict[str, list[float]] = {}
    for c in commands:
        if c.actor is Actor.AGENT and C.SCHED_SUBMIT in c.classes:
            submits.setdefault(c.user, []).append(c.at)
    for times in submits.values():
        times.sort()
    side_jobs: dict[Actor, list[Job]] = {a: [] for a in ACTORS}
    for j in jobs:
        side_jobs[_job_actor(j, submits)].append(j)
    side_cmds: dict[Actor, list[Command]] = {a: [c for c in commands if c.actor is a] for a in ACTORS}
    users = {c.user for c in commands} | {j.user for j in jobs}
    totals = (len(users), len(jobs), sum(j.cpu_seconds for j in jobs) / 3600)
    agent, person = (_side(side_cmds[a], side_jobs[a], minutes, totals, test_partitions) for a in ACTORS)
    return Metrics(round(minutes, 2), agent, person)


def analyze(
    observe_db: Path, journal: Path | None, extra_jobs: Sequence[Job] = (),
    test_partitions: frozenset[str] = TEST_PARTITIONS,
) -> Metrics:  # fmt: skip
    """Load and compute."""
    return compute(*load(observe_db, journal, extra_jobs), test_partitions=test_partitions)


def render(m: Metrics) -> str:
    """A two-column table: agents against people."""
    lines = [f"{'observed minutes':<28} {m.observed_minutes:>12g}", f"{'':<28} {'agents':>12} {'people':>12}"]
    a, p = asdict(m.agent), asdict(m.person)
    for key in a:
        lines.append(f"{key.replace('_', ' '):<28} {a[key]:>12g} {p[key]:>12g}")
    return "\n".join(lines)
