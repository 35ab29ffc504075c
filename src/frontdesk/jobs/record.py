"""`JobRecord`: one stored job, frozen and typed, as the store returns it (never a `sqlite3.Row` or a dict).

`public()` is the JSON form every client sees (`frontdesk status --json`; golden files in tests/golden/cli).
Columns other components add by migration land in `others`; `record["column"]` still answers for code
written against rows (transitional: new code reads the attributes).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from enum import IntEnum
from typing import Any

from frontdesk.jobs.state import JobState

__all__ = ["KEY_SEP", "EndStage", "JobRecord", "PUBLIC_FIELDS", "Scalar", "scoped_key"]

Scalar = str | int | float | None
"""What one SQLite column holds."""

KEY_SEP = "\x1f"
"""Between a principal and its idempotency key in the stored column (no user or principal name holds it)."""


def scoped_key(principal: str, key: str) -> str:
    """An idempotency key as stored: in its principal's own namespace, so the same key of another user is another
    key (it neither finds nor blocks their job, nor tells that it exists). `JobRecord` shows the key as given."""
    return f"{principal}{KEY_SEP}{key}"


class EndStage(IntEnum):
    """How far a job's end got (the `report_pending` column); each stage is stored before the next begins."""

    DONE = 0
    """Not ended, or ended with its report stored and its events fanned out."""
    STATE_STORED = 1
    """The terminal state is stored; the report and the terminal events are not (rebuilt on start)."""
    EVENTS_STORED = 2
    """The report and the terminal events are stored; the fan-out may not have happened (redone on start)."""


PUBLIC_FIELDS = (
    "id",
    "name",
    "state",
    "reason",
    "backend",
    "backend_id",
    "attempt",
    "principal",
    "session",
    "job_class",
    "class_reason",
    "partition",
    "qos",
    "priority",
    "submitted_at",
    "started_at",
    "ended_at",
    "exit_code",
    "signal",
)
"""The job fields of the public JSON form, in order (then `spec`)."""


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job as stored: the current attempt's state and what the job's end left."""

    id: int
    name: str | None
    spec: str
    """The validated JobSpec as JSON text (`spec_data()` parses it)."""
    context: str
    """The submit context as JSON text (cwd, harness, source, env)."""
    state: JobState
    reason: str | None
    backend: str
    backend_id: str | None
    attempt: int
    submitting: bool
    """Between handing the attempt to the backend and recording its id (healed on restart by lookup)."""
    principal: str
    session: str | None
    job_class: str | None
    class_reason: str | None
    partition: str | None
    priority: int
    qos: str | None
    idempotency_key: str | None
    exit_code: int | None
    signal: int | None
    submitted_at: float
    eligible_at: float | None
    started_at: float | None
    ended_at: float | None
    usage: str | None
    stdout_path: str | None
    stderr_path: str | None
    report: str | None
    cancel_requested: bool = False
    """A cancel was asked for while the attempt was (or was being) handed to the backend: it must win."""
    report_pending: EndStage = EndStage.DONE
    """How far the job's end got: anything but DONE is finished on the next start after a crash."""
    plugin_meta: str = "{}"
    """Plug-in name -> what it stored with the job at admission (JSON object text)."""
    array_id: int | None = None
    """A task of an array: the array's id (its parent row); None otherwise."""
    array_index: int | None = None
    """A task of an array: its index."""
    array_size: int | None = None
    """An array's parent row: how many tasks it has (the parent is never handed to a backend)."""
    request_id: str | None = None
    """The submitting client's request id: the same request sent again finds this job (a gateway killed mid-answer)."""
    others: Mapping[str, Scalar] = field(default_factory=dict)
    """Columns added by other components' migrations."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> JobRecord:
        """The record of one `SELECT * FROM jobs` row (a row-like object: `keys()`, values in that order).

        Built field by field through the slots, as the dataclass's own `__init__` does, but without its 36
        keyword arguments (a third of the time); columns are read by position (`row[name]` compares the name
        with every column's). A field the row lacks takes its default; a required one raises TypeError.
        """
        names = tuple(row.keys())
        setters, missing = _PLANS.get(names) or _plan(names)
        rec = object.__new__(cls)
        others: dict[str, Scalar] = {}
        for name, setter, value in zip(names, setters, row, strict=True):
            if setter is None:
                others[name] = value  # a column another component's migration added
            else:
                setter(rec, value)
        for setter, default in missing:
            setter(rec, default())
        _SET["state"](rec, JobState(rec.state))
        _SET["submitting"](rec, bool(rec.submitting))
        _SET["cancel_requested"](rec, bool(rec.cancel_requested))
        _SET["report_pending"](rec, EndStage(int(rec.report_pending or 0)))
        if rec.idempotency_key is not None:  # stored in its principal's namespace (scoped_key): shown as given
            _SET["idempotency_key"](rec, rec.idempotency_key.partition(KEY_SEP)[2] or rec.idempotency_key)
        _SET["priority"](rec, int(rec.priority or 0))
        _SET["others"](rec, others)
        return rec

    @property
    def is_array(self) -> bool:
        """Whether this row is an array's parent (its tasks are rows of their own)."""
        return self.array_size is not None

    @property
    def terminal(self) -> bool:
        """Whether the job has ended for good."""
        return self.state.terminal

    def spec_data(self) -> dict[str, Any]:
        """The spec as parsed JSON."""
        data: dict[str, Any] = json.loads(self.spec)
        return data

    def spec_get(self, key: str, default: Any = None) -> Any:
        """One top-level field of the spec, READ ONLY: parsed once per spec text and shared (the dependency pass
        reads `depends_on`, `dependency_timeout` and `fail_action` of the same job; spec_data() gives a copy)."""
        return _parsed_spec(self.spec).get(key, default)

    def context_data(self) -> dict[str, Any]:
        """The submit context as parsed JSON."""
        data: dict[str, Any] = json.loads(self.context or "{}")
        return data

    def runs_as(self) -> int | None:
        """The uid the job runs as (its submitter's, else its principal's): whose files its logs must be.
        None for a job with neither (the gateway's own); -1 when the principal is no Unix user."""
        uid = self.context_data().get("uid")
        if isinstance(uid, int):
            return uid
        if not self.principal:
            return None
        import pwd

        try:
            return pwd.getpwnam(self.principal).pw_uid
        except KeyError:
            return -1

    def report_data(self) -> dict[str, Any] | None:
        """The stored report, None until it is built."""
        if not self.report:
            return None
        data: dict[str, Any] = json.loads(self.report)
        return data

    def meta(self, plugin: str) -> dict[str, Any]:
        """What plug-in `plugin` stored with this job ({} when nothing)."""
        data = json.loads(self.plugin_meta or "{}").get(plugin) or {}
        return dict(data)

    def public(self) -> dict[str, Any]:
        """The public JSON form (the `frontdesk status --json` schema)."""
        rec: dict[str, Any] = {k: getattr(self, k) for k in PUBLIC_FIELDS}  # plain scalars, but the state
        rec["state"] = self.state.value
        rec["spec"] = self.spec_data()
        if self.array_id is not None:
            rec["array_id"], rec["array_index"] = self.array_id, self.array_index
        if self.array_size is not None:
            rec["array_size"] = self.array_size
        return rec

    # -- transitional row access (code written against sqlite3.Row) ---------------------------------
    def __getitem__(self, key: str) -> Scalar:
        if key in self.others:
            return self.others[key]
        if key not in _COLUMNS:
            raise KeyError(key)
        value = getattr(self, key)
        if isinstance(value, JobState):
            return value.value
        if isinstance(value, bool | IntEnum):
            return int(value)
        if value is None or isinstance(value, str | int | float):
            return value
        raise KeyError(key)

    def keys(self) -> list[str]:
        """Column names, like `sqlite3.Row.keys()`."""
        return [*_COLUMNS, *self.others]

    def __iter__(self) -> Iterator[Scalar]:
        return iter(self[k] for k in self.keys())


def _parsed_spec(text: str) -> dict[str, Any]:
    if len(text) > _SPEC_CACHED_CHARS:
        data: dict[str, Any] = json.loads(text)
        return data
    return _cached_spec(text)


@functools.lru_cache(maxsize=256)
def _cached_spec(text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(text)
    return data


_SPEC_CACHED_CHARS = 8192
"""Specs longer than this are parsed on each read (the cache stays small whatever is submitted)."""

_COLUMNS = tuple(f.name for f in fields(JobRecord) if f.name != "others")
_KNOWN = frozenset(_COLUMNS)

_Setter = Callable[[Any, Any], None]
_SET: dict[str, _Setter] = {f.name: getattr(JobRecord, f.name).__set__ for f in fields(JobRecord)}
"""Each field's slot setter (the frozen class's own `__setattr__` refuses; its `__init__` sets slots the same way)."""
_Plan = tuple[tuple[_Setter | None, ...], tuple[tuple[_Setter, Callable[[], Any]], ...]]
_PLANS: dict[tuple[str, ...], _Plan] = {}
"""Column names of a row -> (a setter per column, None for another component's; the fields it lacks, with defaults)."""


def _same(value: Any) -> Any:
    return value


def _plan(names: tuple[str, ...]) -> _Plan:
    setters = tuple(_SET[n] if n in _KNOWN else None for n in names)
    missing: list[tuple[_Setter, Callable[[], Any]]] = []
    for f in fields(JobRecord):
        if f.name in names or f.name == "others":
            continue
        if f.default is not MISSING:
            missing.append((_SET[f.name], functools.partial(_same, f.default)))
        elif f.default_factory is not MISSING:
            missing.append((_SET[f.name], f.default_factory))
        elif f.name == "priority":
            missing.append((_SET[f.name], int))
        else:
            raise TypeError(f"JobRecord.from_row: the row has no {f.name!r} column")
    if len(_PLANS) >= 32:  # SELECT * gives one shape per schema; a few more at most
        _PLANS.clear()
    plan = _PLANS[names] = (setters, tuple(missing))
    return plan
