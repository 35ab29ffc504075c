"""One report for a whole job array: a table of tasks, best and worst, failure kinds grouped. Pure.

The text stays within the report budget (2 KB by default) whatever the array's size: failed tasks, the best
and the worst come first, then tasks by index while the budget lasts, then one line counting the rest.
The JSON form keeps at most `MAX_TASKS_JSON` task rows (the same choice), so a 10,000-task array's report
stays small too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from frontdesk.jobs.record import JobRecord
from frontdesk.jobs.state import JobState
from frontdesk.reports.model import ArrayReport, ArraySummary, Classification, FailureGroup, MetricInfo, TaskRow
from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["MAX_TASKS_JSON", "TaskSummary", "build_array_report", "index_ranges", "last_metric_line", "metrics_of"]

MAX_TASKS_JSON = 200
"""The most task rows an array report's JSON form keeps."""

_METRIC = re.compile(
    r"(?<![A-Za-z0-9_])((?:val|valid|train|test|eval)_[A-Za-z0-9_]+|loss|acc|accuracy|score|f1|auc|bleu|"
    r"perplexity|ppl|reward|mse|mae|rmse|top[15])\s*[=:]\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)",
    re.IGNORECASE,
)
_LOWER_IS_BETTER = ("loss", "err", "ppl", "perplexity", "mse", "mae", "rmse")


@dataclass(frozen=True)
class TaskSummary:
    """What the array report says about one task (from the task's own stored report)."""

    index: int
    job_id: int
    state: str
    run_s: float | None = None
    peak_rss_bytes: int | None = None
    metric: str | None = None
    """The task's last metric-looking line (`loss=0.3 acc=0.9`), cut to 80 characters."""
    kind: str | None = None
    """The failure kind of its ending (`ok` when it completed)."""
    summary: str | None = None
    """The one-line cause of a failed ending."""
    exit_code: int | None = None


def last_metric_line(lines: Sequence[str]) -> str | None:
    """The last line that looks like a metric (`loss=`, `acc:`, `val_...=`), cut to 80 characters."""
    for line in reversed(lines):
        if _METRIC.search(line):
            text = line.strip()
            return text if len(text) <= 80 else text[:77] + "..."
    return None


def metrics_of(line: str | None) -> dict[str, float]:
    """Metric name (lower case) -> value, for every metric in a line."""
    if not line:
        return {}
    return {m.group(1).lower(): float(m.group(2)) for m in _METRIC.finditer(line)}


def index_ranges(indices: Sequence[int]) -> str:
    """`1,3,5-9` for a set of task indices."""
    out: list[str] = []
    ordered = sorted(set(indices))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def _key_metric(tasks: Sequence[TaskSummary]) -> tuple[str, bool] | None:
    """The metric most tasks print (validation metrics first) and whether lower is better."""
    seen: Counter[str] = Counter()
    for t in tasks:
        seen.update(metrics_of(t.metric).keys())
    if not seen:
        return None
    name = max(seen, key=lambda n: (seen[n], n.startswith(("val", "valid")), n))
    return name, any(part in name for part in _LOWER_IS_BETTER)


def _ranked(tasks: Sequence[TaskSummary], key: tuple[str, bool] | None) -> list[tuple[float, TaskSummary]]:
    if key is None:
        return []
    name, lower = key
    done = [t for t in tasks if t.state == JobState.COMPLETED]  # best and worst among the tasks that completed
    scored = [(metrics_of(t.metric)[name], t) for t in done if name in metrics_of(t.metric)]
    return sorted(scored, key=lambda p: (p[0] if lower else -p[0], p[1].index))


def _failures(tasks: Sequence[TaskSummary]) -> list[FailureGroup]:
    groups: dict[str, list[TaskSummary]] = {}
    for t in tasks:
        if t.state != JobState.COMPLETED and JobState(t.state).terminal:
            groups.setdefault(t.kind or t.state.lower(), []).append(t)
    out = []
    for kind, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        example = next((m.summary for m in members if m.summary), None)
        out.append(FailureGroup(kind=kind, count=len(members), tasks=index_ranges([m.index for m in members]),
                                example=example))  # fmt: skip
    return out


def _row(t: TaskSummary) -> str:
    run = format_duration(t.run_s) if t.run_s is not None else "-"
    peak = format_bytes(t.peak_rss_bytes) if t.peak_rss_bytes is not None else "-"
    return f"{t.index:>5} {t.state[:13]:<13} {run:>7} {peak:>6}  {t.metric or ''}".rstrip()


def _head(parent: JobRecord, counts: Mapping[str, int], size: int, early: bool) -> str:
    name = f" ({parent.name})" if parent.name else ""
    shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    when = "first failure, others still running" if early else str(parent.state)
    return f"frontdesk array {parent.id}{name}: {when}: {size} tasks, {shown}"


def _order(tasks: Sequence[TaskSummary], best: list[TaskSummary], worst: list[TaskSummary]) -> list[TaskSummary]:
    """Which rows matter most: failures, then the best and the worst, then the rest by index."""
    failed = [t for t in tasks if t.state != JobState.COMPLETED and JobState(t.state).terminal]
    rest = [t for t in tasks if t not in failed]
    order: list[TaskSummary] = []
    seen: set[int] = set()
    for t in [*failed, *best, *worst, *rest]:
        if t.index not in seen:
            seen.add(t.index)
            order.append(t)
    return order


def _fit(fixed: list[str], ordered: Sequence[TaskSummary], total: int, max_bytes: int, array_id: int) -> str:
    """The fixed lines, then as many task rows (shown by index) as fit, then a line counting the rest."""
    table_head = f"{'TASK':>5} {'STATE':<13} {'RUN':>7} {'PEAK':>6}  LAST METRIC"
    base = len("\n".join([*fixed, table_head]).encode()) + 1
    reserve = 90  # the "... N more" line
    chosen: list[TaskSummary] = []
    used = base
    for t in ordered:
        cost = len(_row(t).encode()) + 1
        if used + cost + (reserve if len(chosen) + 1 < total else 0) > max_bytes:
            break
        chosen.append(t)
        used += cost
    lines = [*fixed]
    if chosen:
        lines += [table_head, *(_row(t) for t in sorted(chosen, key=lambda t: t.index))]
    left = [t for t in ordered if t not in chosen]
    if left:
        by_state = Counter(t.state for t in left)
        said = ", ".join(f"{n} {s}" for s, n in sorted(by_state.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"... {len(left)} more tasks not shown ({said}); `frontdesk status {array_id} --tasks` lists them")
    text = "\n".join(lines)
    encoded = text.encode()
    if len(encoded) > max_bytes:
        text = encoded[: max_bytes - 3].decode(errors="ignore") + "..."
    return text


def build_array_report(
    parent: JobRecord, tasks: Sequence[TaskSummary], *, early: bool = False, max_bytes: int = 2048
) -> ArrayReport:
    """The array's report (with its `text`); `parent` is the array's own record."""
    counts = dict(Counter(t.state for t in tasks))
    key = _key_metric(tasks)
    ranked = _ranked(tasks, key)
    best = [t for _, t in ranked[:3]]
    worst = [t for _, t in ranked[::-1] if t not in best][:3]
    failures = _failures(tasks)
    runs = [t.run_s for t in tasks if t.run_s is not None]
    peaks = [t.peak_rss_bytes for t in tasks if t.peak_rss_bytes is not None]
    fixed = [_head(parent, counts, len(tasks), early)]
    if runs:
        span = f"task run times {format_duration(min(runs))}-{format_duration(max(runs))}"
        fixed.append(span + (f", peak memory up to {format_bytes(max(peaks))}" if peaks else ""))
    for f in failures[:4]:
        example = f": {f.example[:100]}" if f.example else ""
        fixed.append(f"failed: {f.kind} x{f.count} (tasks {f.tasks[:60]}){example}")
    if len(failures) > 4:
        fixed.append(f"failed: {len(failures) - 4} more kinds")
    if key is not None and best:
        better = "lower" if key[1] else "higher"
        fixed.append(f"best by {key[0]} ({better} is better): " + ", ".join(_best(t, key[0]) for t in best))
        if worst:
            fixed.append("worst: " + ", ".join(_best(t, key[0]) for t in worst))
    ordered = _order(tasks, best, worst)
    kept = sorted(ordered[:MAX_TASKS_JSON], key=lambda t: t.index)
    summary = ArraySummary(
        size=len(tasks),
        counts=counts,
        early=early,
        metric=None if key is None else MetricInfo(name=key[0], better="lower" if key[1] else "higher"),
        best=tuple(t.index for t in best),
        worst=tuple(t.index for t in worst),
        failures=tuple(failures),
        tasks=tuple(TaskRow(**asdict(t)) for t in kept),
        tasks_omitted=len(tasks) - len(kept),
    )
    return ArrayReport(
        job_id=parent.id,
        name=parent.name,
        state=parent.state,
        exit_code=parent.exit_code,
        session=parent.session,
        backend=parent.backend,
        array=summary,
        classification=_classification(failures, len(tasks)),
        text=_fit(fixed, ordered, len(tasks), max_bytes, parent.id),
    )


def _best(t: TaskSummary, name: str) -> str:
    value = metrics_of(t.metric).get(name)
    return f"task {t.index} {name}={value:g}" if value is not None else f"task {t.index}"


def _classification(failures: Sequence[FailureGroup], size: int) -> Classification:
    if not failures:
        return Classification(kind="ok", summary=f"all {size} tasks completed", next_step="", detail="")
    bad = sum(f.count for f in failures)
    top = failures[0]
    summary = f"{bad} of {size} tasks did not complete; most: {top.kind} (tasks {top.tasks[:60]})"
    return Classification(kind=top.kind, summary=summary, next_step="", detail="")
