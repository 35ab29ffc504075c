"""The one-paragraph campaign summary handed to a resumed session: what ran, what is pending, what failed.

Pure: a `Campaign` in, text out (golden file: tests/golden/agents/campaign_summary.txt). It names jobs,
never copies their logs: the unread reports that go before it carry the detail.
"""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.agents.campaign import Campaign, CampaignJob, JobOutcome, PlanStatus

__all__ = ["render_summary", "MAX_LISTED"]

MAX_LISTED = 8
"""Jobs named per group; the rest are counted."""


def _job(j: CampaignJob) -> str:
    return f"#{j.id}" + (f" {j.name}" if j.name else "")


def _listed(jobs: Sequence[CampaignJob], describe: bool = False) -> str:
    names = []
    for j in jobs[:MAX_LISTED]:
        text = _job(j)
        if describe:
            why = [j.state]
            if j.exit_code not in (None, 0):
                why.append(f"exit {j.exit_code}")
            if j.cause or j.reason:
                why.append(str(j.cause or j.reason))
            text += ": " + ", ".join(why)
        names.append(text)
    more = len(jobs) - MAX_LISTED
    return "; ".join(names) + (f"; and {more} more" if more > 0 else "")


def _jobs_sentence(c: Campaign) -> str:
    if not c.jobs:
        return "It has submitted no jobs."
    done = [j for j in c.jobs if j.outcome is JobOutcome.COMPLETED]
    failed = [j for j in c.jobs if j.outcome is JobOutcome.FAILED]
    pending = [j for j in c.jobs if j.outcome is JobOutcome.PENDING]
    parts = []
    if done:
        parts.append(f"{len(done)} completed ({_listed(done)})")
    if failed:
        parts.append(f"{len(failed)} failed ({_listed(failed, describe=True)})")
    if pending:
        states = [f"{_job(j)} {j.state}" for j in pending[:MAX_LISTED]]
        more = len(pending) - MAX_LISTED
        listed = "; ".join(states) + (f"; and {more} more" if more > 0 else "")
        parts.append(f"{len(pending)} still pending and running on without the session ({listed})")
    n = len(c.jobs)
    return f"It submitted {n} job{'s' if n != 1 else ''}: " + ", ".join(parts) + "."


def _plan_sentence(c: Campaign) -> str:
    if not c.plan:
        return ""
    done = sum(1 for p in c.plan if p.status is PlanStatus.COMPLETED)
    text = f"Its last plan ({c.plan_source or 'plan'}) had {done} of {len(c.plan)} steps done"
    current = [p.text for p in c.plan if p.status is PlanStatus.IN_PROGRESS]
    nxt = [p.text for p in c.plan if p.status is PlanStatus.PENDING]
    if current:
        text += f"; in progress: {current[0]!r}"
    if nxt:
        text += f"; next: {nxt[0]!r}"
    return text + "."


def render_summary(c: Campaign) -> str:
    """One paragraph: where the campaign ran, its jobs by outcome, reports waiting, lessons, its plan."""
    where = f" in {c.cwd}" if c.cwd else ""
    node = f" on {c.host}" if c.host else ""
    head = f"[frontdesk] Campaign summary for session {c.session} ({c.harness}{where}{node}, turn {c.turn}"
    head += f", resumed {c.incarnation} time{'s' if c.incarnation != 1 else ''} before)." if c.incarnation else ")."
    sentences = [head, _jobs_sentence(c)]
    if c.turn_unfinished:
        sentences.append(
            "The harness stopped in the middle of its last turn: repeating a submission of that turn returns "
            "the job it already made (the same idempotency key), so nothing runs twice."
        )
    if c.unread:
        ids = ", ".join(str(r.job_id) for r in c.unread)
        n = len(c.unread)
        sentences.append(
            f"{n} report{'s' if n != 1 else ''} arrived while it was away ({'jobs' if n != 1 else 'job'} {ids})."
        )
    if c.lessons:
        ids = ", ".join(f"#{lesson.lesson_id}" for lesson in c.lessons)
        sentences.append(f"Failure-memory lessons already shown to it: {ids}.")
    plan = _plan_sentence(c)
    if plan:
        sentences.append(plan)
    return " ".join(sentences)
