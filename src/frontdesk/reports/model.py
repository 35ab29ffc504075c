"""`Report`: what a job's end tells, frozen and typed (built by build.py, rendered by render.py). Pure.

Plug-ins enrich it through the gateway's seam (`plugins.Enriches`): each adds its own typed section under
`extra.<plug-in name>` with `Report.with_section` (memory's and policy's are modelled here; a site plug-in
subclasses `ReportSection`, or passes JSON fields to it) and may amend the next step (`with_next_step`).

`wire()` is the JSON form: the stored report, the `job.report` event's `report`, `frontdesk report --json`
(golden files in tests/golden/reports and tests/golden/cli); `Report.from_wire` reads it back. A section's
field left unset is absent from its JSON, as it was when sections were plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, SerializeAsAny

from frontdesk.jobs.state import JobState

__all__ = [
    "ArrayReport",
    "ArraySummary",
    "Classification",
    "FailureGroup",
    "GpuShared",
    "LessonSummary",
    "MemorySection",
    "MemorySuggestion",
    "PolicySection",
    "Report",
    "ReportSection",
    "Requested",
    "SECTIONS",
    "MetricInfo",
    "SignatureInfo",
    "TaskRow",
    "Used",
]

Number = int | float
"""A figure as measured (an int stays an int in the JSON, a float a float)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GpuShared(_Frozen):
    """A share of one GPU, as asked (`resources.gpu`)."""

    memory_bytes: int | None = None
    share: Number | None = None


class Requested(_Frozen):
    """What the job asked for."""

    cpus: Number = 1
    memory_bytes: int | None = None
    gpus: Number = 0
    walltime_s: Number | None = None
    gpu_shared: GpuShared | None = None
    """Only for a share of a GPU (absent from the JSON otherwise)."""

    def wire(self) -> dict[str, JsonValue]:
        """The JSON form."""
        return self.model_dump(mode="json", exclude={"gpu_shared"} if self.gpu_shared is None else None)


class Used(_Frozen):
    """What the job used (None where the backend could not tell)."""

    cpu_seconds: Number | None = None
    peak_rss_bytes: Number | None = None
    gpu_util_percent: Number | None = None
    gpu_mem_peak_bytes: Number | None = None


class Classification(_Frozen):
    """The ending's kind (`FailureKind`), a one-line summary, the next step and the kind's detail."""

    kind: str
    summary: str
    next_step: str
    detail: str


class ReportSection(BaseModel):
    """What one plug-in adds to a report (`extra.<name>`); a site plug-in's fields are JSON values."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    def wire(self) -> dict[str, JsonValue]:
        """The JSON form: the fields that were set (by name, or by alias where a field has one)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def notes(self) -> list[str]:
        """Lines for the report's text: `lines`, then the `text` of `matched` and `lessons` entries."""
        data = self.wire()
        texts = [str(x) for x in _items(data.get("lines"))]
        for key in ("matched", "lessons"):
            texts += [str(x["text"]) for x in _items(data.get(key)) if isinstance(x, dict) and x.get("text")]
        return texts


def _items(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


class SignatureInfo(_Frozen):
    """A classified failure as memory stores it (`memory.classify.Signature`, without the raw log line)."""

    key: str
    state: str | None
    kind: str
    detail: str
    cause: str
    normalised_line: str
    matcher: str | None
    next_step: str


class LessonSummary(_Frozen):
    """One lesson, as a report names it."""

    id: int
    scope: str
    signature: str
    status: str
    fact: bool
    fix: dict[str, JsonValue] | None
    times_seen: int
    times_held: int
    text: str
    next_step: str


class MemorySuggestion(_Frozen):
    """The --mem to ask for next after an out-of-memory ending, and on what evidence."""

    memory_bytes: int
    basis: str
    next_step: str


class MemorySection(ReportSection):
    """`extra.memory`: the failure's signature, the lessons it recorded or confirmed, those that matched."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    signature: SignatureInfo | None = None
    lessons: tuple[LessonSummary, ...] = ()
    matched: tuple[LessonSummary, ...] = ()
    suggest: MemorySuggestion | None = None
    """Only after an out-of-memory ending."""
    partition: str | None = None
    """Only when the job's own partition cannot hold the advice."""

    def notes(self) -> list[str]:
        """The text of each matched lesson, then of each lesson recorded or confirmed."""
        return [lesson.text for lesson in (*self.matched, *self.lessons) if lesson.text]


class PolicySection(ReportSection):
    """`extra.policy`: the job's class, pool and trial standing."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    job_class: str | None = Field(
        default=None, serialization_alias="class", validation_alias=AliasChoices("class", "job_class")
    )
    pool: str | None = None
    class_reason: str | None = None
    trial: bool = False
    trial_revoked: str | None = None
    """Only when this trial run cost the principal the trial privilege."""

    def notes(self) -> list[str]:
        """Nothing: the class and pool are in the JSON only."""
        return []


SECTIONS: Mapping[str, type[ReportSection]] = {"memory": MemorySection, "policy": PolicySection}
"""The built-in plug-ins' section types (others are read back as plain `ReportSection`s)."""


class Report(_Frozen):
    """A job's report (see the module docstring); `text` is set once it is rendered."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("text", "array_id", "array_index", "suspended_s")
    """Keys the JSON leaves out while they are None (a report before rendering; a job that is no task; a job
    never suspended)."""

    job_id: int
    name: str | None = None
    state: JobState
    exit_code: int | None = None
    signal: int | None = None
    attempts: int = 1
    backend: str | None = None
    backend_id: str | None = None
    session: str | None = None
    queue_wait_s: Number | None = None
    run_s: Number | None = None
    """From its start to its end, time suspended included."""
    suspended_s: Number | None = None
    """Of `run_s`, the time it was suspended (its cores lent to trials); None when it never was."""
    requested: Requested = Requested()
    used: Used = Used()
    classification: Classification
    stdout_tail: tuple[str, ...] = ()
    stderr_tail: tuple[str, ...] = ()
    extra: Mapping[str, SerializeAsAny[ReportSection]] = Field(default_factory=dict)
    """Plug-in name -> its section."""
    text: str | None = None
    """The short text an agent reads (render.py), at most the report budget."""
    array_id: int | None = None
    """A task of an array: told within its array's one report, never on its own."""
    array_index: int | None = None

    def with_section(self, name: str, section: ReportSection) -> Report:
        """This report with plug-in `name`'s section."""
        return self.model_copy(update={"extra": {**self.extra, name: section}})

    def section(self, name: str) -> ReportSection | None:
        """Plug-in `name`'s section, None when it added none."""
        return self.extra.get(name)

    def with_next_step(self, step: str) -> Report:
        """This report with another next step (a plug-in that knows better, e.g. memory's --mem)."""
        cls = self.classification.model_copy(update={"next_step": step})
        return self.model_copy(update={"classification": cls})

    def with_text(self, text: str) -> Report:
        """This report with its rendered text."""
        return self.model_copy(update={"text": text})

    def as_task(self, array_id: int, array_index: int | None) -> Report:
        """This report as an array task's (its array's one report tells it)."""
        return self.model_copy(update={"array_id": array_id, "array_index": array_index})

    def wire(self) -> dict[str, JsonValue]:
        """The JSON form (the key order is the stored one)."""
        out = self.model_dump(mode="json", exclude={"extra", *self.OMITTED_WHEN_NONE})
        out["requested"] = self.requested.wire()
        out["extra"] = {name: section.wire() for name, section in self.extra.items()}
        if self.text is not None:
            out["text"] = self.text
        if self.array_id is not None:
            out["array_id"], out["array_index"] = self.array_id, self.array_index
        if self.suspended_s is not None:
            out["suspended_s"] = self.suspended_s
        return out

    @classmethod
    def from_wire(cls, data: Mapping[str, JsonValue]) -> Report:
        """A report from its JSON form (ValidationError when it is not one); sections by their plug-in's type."""
        raw = data.get("extra")
        extra = {
            name: SECTIONS.get(name, ReportSection).model_validate(value)
            for name, value in (raw.items() if isinstance(raw, dict) else ())
        }
        return cls.model_validate({**data, "extra": extra})


class TaskRow(_Frozen):
    """One task of an array, as its array's report lists it."""

    index: int
    job_id: int
    state: str
    run_s: Number | None = None
    peak_rss_bytes: Number | None = None
    metric: str | None = None
    kind: str | None = None
    summary: str | None = None
    exit_code: int | None = None


class FailureGroup(_Frozen):
    """Tasks that failed the same way: their kind, how many, which (`3,5-9`) and one example cause."""

    kind: str
    count: int
    tasks: str
    example: str | None = None


class MetricInfo(_Frozen):
    """The metric the array's tasks are ranked by."""

    name: str
    better: Literal["lower", "higher"]


class ArraySummary(_Frozen):
    """What the array's tasks did: counts by state, best and worst, failure groups, at most 200 task rows."""

    size: int
    counts: dict[str, int]
    early: bool
    metric: MetricInfo | None = None
    best: tuple[int, ...] = ()
    worst: tuple[int, ...] = ()
    failures: tuple[FailureGroup, ...] = ()
    tasks: tuple[TaskRow, ...] = ()
    tasks_omitted: int = 0


class ArrayReport(_Frozen):
    """An array's one report (reports/arrays.py), told instead of each task's."""

    job_id: int
    name: str | None = None
    state: JobState
    exit_code: int | None = None
    signal: int | None = None
    session: str | None = None
    backend: str | None = None
    array: ArraySummary
    classification: Classification
    extra: Mapping[str, SerializeAsAny[ReportSection]] = Field(default_factory=dict)
    text: str

    def with_text(self, text: str) -> ArrayReport:
        """This report with another text (redacted)."""
        return self.model_copy(update={"text": text})

    def wire(self) -> dict[str, JsonValue]:
        """The JSON form (the key order is the stored one)."""
        out = self.model_dump(mode="json", exclude={"extra", "text"})
        out["extra"] = {name: section.wire() for name, section in self.extra.items()}
        out["text"] = self.text
        return out
