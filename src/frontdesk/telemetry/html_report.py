"""`frontdesk analyze --html FILE`: the metrics table and two figures (matplotlib, embedded as PNG) in one
self-contained HTML file. matplotlib is imported only here; without it the command says how to get it."""

from __future__ import annotations

import base64
import io
from dataclasses import asdict
from html import escape

from frontdesk.errors import UserError
from frontdesk.telemetry.analyze import Metrics

__all__ = ["render_html"]

_SHARES = ("user_share", "job_share", "cpu_share")
_RATES = (
    "commands_per_user_minute",
    "cancel_rate",
    "sub_minute_share",
    "sched_queries_per_job",
    "file_tools_per_100_jobs",
    "tree_walks_per_user",
)


def _figure(m: Metrics, keys: tuple[str, ...], title: str, log: bool) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UserError("--html needs matplotlib (pip install matplotlib)") from exc
    a, p = asdict(m.agent), asdict(m.person)
    fig, ax = plt.subplots(figsize=(7, 3.2), dpi=100)
    xs = range(len(keys))
    ax.bar([x - 0.2 for x in xs], [a[k] for k in keys], width=0.4, label="agents")
    ax.bar([x + 0.2 for x in xs], [p[k] for k in keys], width=0.4, label="people")
    ax.set_xticks(list(xs), [k.replace("_", " ") for k in keys], rotation=20, ha="right", fontsize=8)
    if log:
        ax.set_yscale("symlog", linthresh=0.01)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def render_html(m: Metrics) -> str:
    """The whole report."""
    a, p = asdict(m.agent), asdict(m.person)
    rows = "".join(f"<tr><td>{escape(k.replace('_', ' '))}</td><td>{a[k]:g}</td><td>{p[k]:g}</td></tr>" for k in a)
    shares = _figure(m, _SHARES, "Shares of users, jobs and CPU hours", log=False)
    rates = _figure(m, _RATES, "Behaviour per user, job and minute", log=True)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>frontdesk analyze</title></head><body>"
        f"<h1>Agents and people</h1><p>Observed minutes: {m.observed_minutes:g}</p>"
        f"<table border='1'><tr><th></th><th>agents</th><th>people</th></tr>{rows}</table>"
        f"<img alt='shares' src='data:image/png;base64,{shares}'>"
        f"<img alt='rates' src='data:image/png;base64,{rates}'></body></html>\n"
    )
