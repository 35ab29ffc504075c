"""The gateway's web page (pure rendering): queue, recent jobs with their report's classification, guard
verdicts, and each plug-in's `Panel` (sessions, lessons, pools and trials), for what the caller may see.
Server-rendered HTML, no build step, no outside asset; it refreshes its main part every few seconds from
`/?part=main` (a few lines of inline script).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from frontdesk.plugins import Panel

__all__ = ["JobRow", "VerdictRow", "job_rows", "render_page", "render_main", "render_report"]

REFRESH_MS = 3000


@dataclass(frozen=True)
class JobRow:
    """One job as the page shows it."""

    id: int
    name: str
    user: str
    state: str
    job_class: str
    kind: str
    """The report's failure classification (empty until the job has a report)."""


@dataclass(frozen=True)
class VerdictRow:
    """One journalled guard verdict."""

    seq: int
    user: str
    verdict: str
    rule: str
    command: str


def job_rows(records: Sequence[object]) -> list[JobRow]:
    """JobRows from stored JobRecords (their `report` JSON gives the classification)."""
    out = []
    for r in records:
        report = _obj(getattr(r, "report", None))
        cls = report.get("classification")
        kind = str(cls.get("kind") or "") if isinstance(cls, dict) else ""
        out.append(
            JobRow(
                int(getattr(r, "id", 0)),
                str(getattr(r, "name", None) or ""),
                str(getattr(r, "principal", "")),
                str(getattr(r, "state", "")),
                str(getattr(r, "job_class", None) or ""),
                kind,
            )
        )
    return out


def _obj(raw: object) -> dict[str, object]:
    try:
        data = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _panel(panel: Panel) -> str:
    table = _table(panel.columns, [[escape(c) for c in row] for row in panel.rows])
    note = f'<p class="note">{escape(panel.note)}</p>' if panel.note else ""
    return f"<h2>{escape(panel.title)}</h2>{table if panel.rows else '<p>none</p>'}{note}"


def render_main(
    user: str, admin: bool, jobs: Sequence[JobRow], verdicts: Sequence[VerdictRow], panels: Sequence[Panel] = ()
) -> str:
    """The part of the page that refreshes (escaped: names and commands come from users)."""
    scope = "all users" if admin else f"user {escape(user)}"
    states = Counter(j.state for j in jobs)
    queue = _table(["state", "jobs"], [[escape(s), str(n)] for s, n in sorted(states.items())])
    job_table = _table(
        ["id", "name", "user", "state", "class", "report"],
        [
            [
                str(j.id),
                escape(j.name),
                escape(j.user),
                f'<span class="state {escape(j.state.lower())}">{escape(j.state)}</span>',
                escape(j.job_class),
                f'<a href="/ui/jobs/{j.id}">{escape(j.kind or "report")}</a>' if j.state else "",
            ]
            for j in jobs
        ],
    )
    guard = _table(
        ["#", "user", "verdict", "rule", "command"],
        [[str(v.seq), escape(v.user), escape(v.verdict), escape(v.rule), escape(v.command)] for v in verdicts],
    )
    return (
        f'<div id="main"><p class="scope">Showing {scope}.</p>'
        f"<h2>Queue</h2>{queue}<h2>Recent jobs</h2>{job_table}<h2>Guard verdicts</h2>{guard}"
        f"{''.join(_panel(p) for p in panels)}</div>"
    )


_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:1em}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.failed{color:#b00}.completed{color:#070}"
)
_SCRIPT = (
    "setInterval(async()=>{try{const r=await fetch('/?part=main');if(r.ok){"
    "document.getElementById('main').outerHTML=await r.text();}}catch(e){}}," + str(REFRESH_MS) + ");"
)


def render_page(
    user: str, admin: bool, jobs: Sequence[JobRow], verdicts: Sequence[VerdictRow], panels: Sequence[Panel] = ()
) -> str:
    """The whole page."""
    main = render_main(user, admin, jobs, verdicts, panels)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>frontdesk</title><style>{_STYLE}</style></head>"
        f"<body><h1>frontdesk</h1>{main}<script>{_SCRIPT}</script></body></html>\n"
    )


def render_report(job_id: int, text: str) -> str:
    """A job's report page."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>frontdesk job {job_id}</title>"
        f"<style>{_STYLE}</style></head><body><p><a href='/'>back</a></p><h1>Job {job_id}</h1>"
        f"<pre id='report'>{escape(text)}</pre></body></html>\n"
    )
