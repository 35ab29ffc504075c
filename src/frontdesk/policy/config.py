"""The `[policy]` section of frontdesk.toml, validated whole with pydantic (an invalid file is refused whole).

Every field has a default, so an empty `[policy]` is a working policy: one shared pool on the embedded
backend, the issue's MLFQ timings, a trial budget and the shipped accelerator catalog.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator, model_validator

from frontdesk.config import TableKeys, nearest
from frontdesk.errors import ConfigError
from frontdesk.policy.suspend import TURNAROUND, SuspendRules
from frontdesk.spec.units import parse_duration, parse_memory

__all__ = [
    "POLICY_KEYS",
    "BorrowRule",
    "ClassifyConfig",
    "ClassPriority",
    "HealthConfig",
    "PolicyConfig",
    "PoolConfig",
    "PriorityConfig",
    "SuspendConfig",
    "TimeWeight",
    "TrialConfig",
    "parse_policy",
]

JOB_CLASSES = ("agent", "training", "hpc", "inference")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _dur(v: Any) -> Any:
    return parse_duration(v) if isinstance(v, str) else v


def _mem(v: Any) -> Any:
    return parse_memory(v) if isinstance(v, str) else v


class ClassifyConfig(_Model):
    """Thresholds that classify a job without a `type`."""

    training_min_gpus: Annotated[int, Field(ge=1)] = 2
    training_min_walltime: int = 2 * 3600
    hpc_min_cpus: Annotated[int, Field(ge=1)] = 32
    agent_max_cpus: Annotated[int, Field(ge=1)] = 8
    agent_max_gpus: Annotated[int, Field(ge=0)] = 1
    agent_max_walltime: int = 30 * 60
    default_class: Literal["agent", "training", "hpc", "inference"] = "hpc"

    _d = field_validator("training_min_walltime", "agent_max_walltime", mode="before")(_dur)


class PoolConfig(_Model):
    """A named pool: Slurm partition, or a slice of the embedded machine (cpus/memory/gpus)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    classes: list[str] = Field(default_factory=lambda: list(JOB_CLASSES))
    allocation: Literal["whole_node", "pack", "spread"] = "pack"
    cpu_oversubscribe: Annotated[float, Field(ge=1.0, le=16.0)] = 1.0
    """Agent jobs may share cores up to this ratio (4.0 = 1:4); GPUs and memory are never oversubscribed."""
    partition: str | None = None
    qos: str | None = None
    nodes: list[str] = Field(default_factory=list)
    """Simulator and Slurm: node names in this pool (empty = decided by the cluster description)."""
    cpus: int | None = None
    memory: int | None = None
    gpus: int | None = None
    agent_cores: Annotated[int, Field(ge=0)] = 0
    """A pool that takes agent work and batch classes: cores kept for agent work (granted trials). A batch job
    starts only if the pool keeps this many cores free, less those agent work holds; agent work may use any
    free core (beyond the slice only around the EASY head's reservation)."""
    agent_max_cores: Annotated[int, Field(ge=1)] | None = None
    """A mixed pool: the most cores agent work may hold at once (a lane bounded in size) while the pool is
    congested (see `agent_lane_after`); None: no bound."""
    agent_lane_after: Annotated[int, Field(ge=0)] = 3600
    """The lane binds while a batch job has waited this long in the pool (a congested pool)."""
    agent_fill: Annotated[float, Field(ge=0, le=1)] = 1.0
    """The share of the EASY head's reserved cores agent work may hold when it ends before the shadow time."""

    _m = field_validator("memory", mode="before")(_mem)
    _d = field_validator("agent_lane_after", mode="before")(_dur)

    @field_validator("classes")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if c not in JOB_CLASSES]
        if bad:
            raise ValueError(f"unknown job class {bad[0]!r} (one of {', '.join(JOB_CLASSES)})")
        return v


class BorrowRule(_Model):
    """Idle nodes of `lender` may run `classes` jobs of `borrower` between `start_hour` and `end_hour`."""

    lender: str
    borrower: str
    classes: list[str] = Field(default_factory=lambda: ["training"])
    start_hour: Annotated[int, Field(ge=0, le=23)] = 22
    end_hour: Annotated[int, Field(ge=0, le=24)] = 6
    max_duration: int = 4 * 3600
    keep_idle: Annotated[int, Field(ge=0)] = 1
    """Nodes the lender always keeps for itself."""
    on_reclaim: Literal["requeue", "preempt"] = "requeue"
    only_fitting: StrictBool = True
    """Lend only to jobs whose walltime ends within `max_duration` and the window (never reclaimed)."""

    _d = field_validator("max_duration", mode="before")(_dur)

    @field_validator("classes")
    @classmethod
    def _no_hpc(cls, v: list[str]) -> list[str]:
        if "hpc" in v:
            raise ValueError("hpc jobs never borrow: a borrower can be reclaimed, and hpc is never preempted")
        return v


class ClassPriority(_Model):
    """Where a class enters the MLFQ and how it moves while it waits."""

    enter: Annotated[int, Field(ge=0, le=9)]
    drop_after: int | None = None
    """Seconds without starting after which the job drops one level (agent, trial)."""
    floor: Annotated[int, Field(ge=0, le=9)] = 0
    age_every: int | None = None
    """Seconds of waiting per level gained (training)."""
    ceiling: Annotated[int, Field(ge=0, le=9)] = 4

    _d = field_validator("drop_after", "age_every", mode="before")(_dur)


class TimeWeight(_Model):
    """Multiply the in-level score of `classes` by `weight` between `start_hour` and `end_hour`."""

    start_hour: Annotated[int, Field(ge=0, le=23)]
    end_hour: Annotated[int, Field(ge=0, le=24)]
    classes: list[str] = Field(default_factory=lambda: list(JOB_CLASSES))
    weight: Annotated[float, Field(gt=0, le=100)] = 1.0


def _default_classes() -> dict[str, ClassPriority]:
    return {
        "trial": ClassPriority(enter=4, drop_after=30, floor=2),
        "agent": ClassPriority(enter=3, drop_after=30, floor=1),
        "inference": ClassPriority(enter=3, drop_after=60, floor=1),
        "training": ClassPriority(enter=1, age_every=600, ceiling=3),
        "hpc": ClassPriority(enter=0, age_every=3600, ceiling=2),
    }


class PriorityConfig(_Model):
    """The multi-level feedback queue, fairshare and time-of-day weights."""

    classes: dict[str, ClassPriority] = Field(default_factory=_default_classes)
    fairshare_half_life: int = 3600
    principal_weight: Annotated[float, Field(ge=0, le=1)] = 0.7
    """Share of the fairshare factor from the principal; the rest from its group (lab)."""
    time_weights: list[TimeWeight] = Field(default_factory=list)
    reprioritise_every: Annotated[int, Field(ge=1, le=3600)] = 10
    """Slurm: how often waiting jobs' levels are recomputed and pushed to Slurm as `Nice` (seconds)."""

    _d = field_validator("fairshare_half_life", "reprioritise_every", mode="before")(_dur)

    @field_validator("classes", mode="before")
    @classmethod
    def _merge(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        base: dict[str, Any] = {k: c.model_dump() for k, c in _default_classes().items()}
        for key, val in v.items():
            base[key] = {**base.get(key, {}), **val} if isinstance(val, dict) else val
        return base


class TrialConfig(_Model):
    """The trial privilege: fast start within a budget, lost for a cool-down by those who game it."""

    max_cpus: Annotated[int, Field(ge=1)] = 4
    max_gpus: Annotated[int, Field(ge=0)] = 1
    max_memory: int = 16 * 1024**3
    walltime_cap: int = 10 * 60
    rate: Annotated[int, Field(ge=1)] = 30
    rate_window: int = 600
    cap_hits: Annotated[int, Field(ge=1)] = 3
    """Trials that ran to (95 % of) the cap within `strike_window` before the privilege is revoked."""
    chain_length: Annotated[int, Field(ge=2)] = 3
    """Same-template trials resubmitted within `chain_gap` after one ran to the cap."""
    chain_gap: int = 120
    strike_window: int = 3600
    cooldown: int = 3600

    _d = field_validator("walltime_cap", "rate_window", "chain_gap", "strike_window", "cooldown", mode="before")(_dur)
    _m = field_validator("max_memory", mode="before")(_mem)


class HealthConfig(_Model):
    """Node health checks; a node that fails one is drained (running jobs finish, nothing new lands)."""

    max_gpu_temp_c: float = 87.0
    min_free_disk: int = 2 * 1024**3
    disk_path: str | None = None
    command: list[str] | None = None
    interval: int = 30

    _m = field_validator("min_free_disk", mode="before")(_mem)
    _d = field_validator("interval", mode="before")(_dur)


class SuspendConfig(_Model):
    """Preemption by suspension on the embedded backend (docs/policy.md): a granted trial that cannot start
    suspends running batch jobs of its pool, with the simulator's rules (`policy/suspend.py`); the defaults are
    the simulated `frontdesk-suspend`'s (`TURNAROUND`). Off by default."""

    enabled: StrictBool = False
    trial_limit: Annotated[int, Field(ge=1)] = int(TURNAROUND.trial_limit_s)
    """Only trials asking at most this long may suspend."""
    max_share: Annotated[float, Field(ge=0, le=1)] = TURNAROUND.max_share
    """A job is suspended at most this share of its requested time (with `count_wait`, of its turnaround)."""
    rest: Annotated[int, Field(ge=0)] = int(TURNAROUND.rest_s)
    """A job resumed must run this long before it may be suspended again."""
    grace: Annotated[int, Field(ge=0)] = int(TURNAROUND.grace_s)
    """A trial suspends only after waiting this long."""
    count_wait: StrictBool = TURNAROUND.count_wait
    """The share counts the job's wait before it started too (its turnaround grows by at most `max_share`)."""
    extend: StrictBool = TURNAROUND.extend
    """A trial ending past its group's end may still join it while every victim's share allows."""
    fill: StrictBool = TURNAROUND.fill
    """Queued jobs that end by a group's end run on its idle lent cores."""
    keep_for_trials: Annotated[float, Field(ge=0, le=100_000)] = TURNAROUND.keep_for_trials
    """With `fill`: lent cores left idle for trials still to come."""

    _d = field_validator("trial_limit", mode="before")(_dur)

    @field_validator("rest", "grace", mode="before")
    @classmethod
    def _none_is_zero(cls, v: Any) -> Any:
        """`rest`/`grace` may be none at all ("0s"), which a duration elsewhere may not."""
        if isinstance(v, str) and re.fullmatch(r"\s*0+(\.0*)?\s*[smhd]?\s*", v):
            return 0
        return _dur(v)

    def rules(self) -> SuspendRules | None:
        """The simulator's rules with these values; None when suspension is off."""
        if not self.enabled:
            return None
        return SuspendRules(
            trial_limit_s=float(self.trial_limit),
            max_share=self.max_share,
            rest_s=float(self.rest),
            grace_s=float(self.grace),
            count_wait=self.count_wait,
            extend=self.extend,
            fill=self.fill,
            keep_for_trials=self.keep_for_trials,
        )


class PolicyConfig(_Model):
    """The whole `[policy]` table."""

    classify: ClassifyConfig = Field(default_factory=ClassifyConfig)
    pools: list[PoolConfig] = Field(default_factory=lambda: [PoolConfig(name="default")])
    borrow: list[BorrowRule] = Field(default_factory=list)
    priority: PriorityConfig = Field(default_factory=PriorityConfig)
    trial: TrialConfig = Field(default_factory=TrialConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)
    suspend: SuspendConfig = Field(default_factory=SuspendConfig)
    catalog_extra: list[dict[str, Any]] = Field(default_factory=list)
    backfill_depth: Annotated[int, Field(ge=1, le=10000)] = 200
    easy_head: StrictBool = True
    """In a pool shared by agent work and batch classes, the oldest queued job goes first (EASY's head) and
    agent work only backfills around it: agents never delay an hpc or training job. False: MLFQ order alone
    (a trial may take cores an older batch job could have started on)."""

    @model_validator(mode="after")
    def _pools_consistent(self) -> PolicyConfig:
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError(f"pools: names must be unique: {names}")
        for rule in self.borrow:
            for side in (rule.lender, rule.borrower):
                if side not in names:
                    raise ValueError(f"borrow: a rule names unknown pool {side!r}")
        return self

    def pool(self, name: str) -> PoolConfig | None:
        """The pool called `name`, if any."""
        return next((p for p in self.pools if p.name == name), None)

    def pool_named(self, name: str | None) -> PoolConfig | None:
        """The pool whose name or Slurm partition is `name`."""
        return next((p for p in self.pools if name in (p.name, p.partition)), None) if name else None

    def pool_for(self, job_class: str) -> PoolConfig:
        """The first pool that takes `job_class` (the first pool when none names it)."""
        return next((p for p in self.pools if job_class in p.classes), self.pools[0])


def parse_policy(raw: dict[str, Any] | None, source: str = "[policy]") -> PolicyConfig:
    """Validate a raw `[policy]` table; any problem raises one ConfigError naming the field."""
    try:
        return PolicyConfig.model_validate(raw or {})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "(policy)"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field" + _nearest_of([str(p) for p in err.get("loc", ())])
        raise ConfigError(f"{source}: {where}: {msg}", field=where) from None


POLICY_KEYS = TableKeys.of("policy", PolicyConfig.model_fields)
"""`[policy]`'s top-level keys (the fields of PolicyConfig; its parser checks the nested tables)."""


def _nearest_of(loc: list[str]) -> str:
    """' (did you mean NAME?)' for an unknown field at `loc`: the nearest field of the model that holds it."""
    model: type[BaseModel] = PolicyConfig
    for part in loc[:-1]:  # a list index or a free name (priority.classes.agent) keeps the model
        field = model.model_fields.get(part)
        models = [a for a in _args(field.annotation if field else None) if issubclass(a, BaseModel)]
        model = models[0] if models else model
    near = nearest(loc[-1], model.model_fields) if loc else None
    return f" (did you mean {near}?)" if near else ""


def _args(annotation: Any) -> list[type]:
    """The classes an annotation names (list[PoolConfig] -> list, PoolConfig)."""
    if isinstance(annotation, type):
        return [annotation]
    return [a for arg in getattr(annotation, "__args__", ()) for a in _args(arg)]
