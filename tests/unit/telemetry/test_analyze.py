"""`frontdesk analyze` on a synthetic week drawn to known marginals: the metrics come back within tolerance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from synthetic import MARGINALS, WEEK_S, Truth, generate  # noqa: E402

from frontdesk.telemetry import analyze as analyze_mod  # noqa: E402
from frontdesk.telemetry import sacct  # noqa: E402
from frontdesk.telemetry.analyze import ActorMetrics, Metrics, render  # noqa: E402
from frontdesk.telemetry.attribution import Actor  # noqa: E402

TRUTH: dict[Actor, Truth] = {}


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("week")
    TRUTH.update(generate(d / "observe.db", d / "frontdesk.db", sacct_path=d / "sacct.txt"))
    return d / "observe.db", d / "frontdesk.db"


def analyze(observe: Path, journal: Path | None) -> Metrics:
    """The week as a site sees it: the observe file, the gateway's journal and Slurm's accounting."""
    assert journal is not None
    return analyze_mod.analyze(observe, journal, sacct.read(journal.with_name("sacct.txt")).jobs)


def _close(got: float, want: float, rel: float) -> None:
    assert got == pytest.approx(want, rel=rel), (got, want)


@pytest.mark.parametrize("actor", [Actor.AGENT, Actor.PERSON])
def test_the_metrics_match_the_generated_marginals(week: tuple[Path, Path], actor: Actor) -> None:
    m = analyze(*week)
    got: ActorMetrics = m.agent if actor is Actor.AGENT else m.person
    side = MARGINALS[actor]
    sides = MARGINALS.values()
    total_users = sum(s.users for s in sides)
    total_jobs = sum(s.users * s.jobs_per_user for s in sides)
    total_cpu = sum(s.users * s.jobs_per_user * s.mean_cpu_hours() for s in sides)
    assert m.observed_minutes == pytest.approx(WEEK_S / 60)
    assert got.users == side.users and got.user_share == pytest.approx(side.users / total_users, abs=1e-3)
    _close(got.jobs, side.users * side.jobs_per_user, 0.1)
    _close(got.job_share, side.users * side.jobs_per_user / total_jobs, 0.1)
    _close(got.cpu_share, side.users * side.jobs_per_user * side.mean_cpu_hours() / total_cpu, 0.15)
    assert got.cancel_rate == pytest.approx(side.cancel_p, abs=0.04)
    assert got.sub_minute_share == pytest.approx(side.sub_minute_p, abs=0.05)
    _close(got.sched_queries_per_job, side.queries_per_job, 0.1)
    _close(got.file_tools_per_100_jobs, 100 * side.file_tools_per_job, 0.15)
    _close(got.tree_walks_per_user, side.tree_walks_per_user, 0.15)
    per_user = side.jobs_per_user * (1 + side.queries_per_job + side.file_tools_per_job) + (
        side.tree_walks_per_user + side.destructive_per_user + side.fetches_per_user
    )
    _close(got.commands_per_user_minute, per_user / (WEEK_S / 60), 0.1)
    for count, mean in (
        (got.destructive, side.users * side.destructive_per_user),
        (got.fetches, side.users * side.fetches_per_user),
    ):
        assert abs(count - mean) <= 4 * mean**0.5, (count, mean)  # Poisson counts: within 4 sd


def test_agent_jobs_without_context_are_joined_from_the_observed_submissions(week: tuple[Path, Path]) -> None:
    import sqlite3

    db = sqlite3.connect(week[1])
    in_context = db.execute("SELECT COUNT(*) FROM jobs WHERE context LIKE '%harness%'").fetchone()[0]
    agent = analyze(*week).agent
    assert in_context < 0.6 * agent.jobs  # about half of the agents' jobs carry no harness: found by the join
    assert agent.jobs == sum(1 for p in db.execute("SELECT principal FROM jobs") if p[0].startswith("uid:41"))


@pytest.mark.parametrize("actor", [Actor.AGENT, Actor.PERSON])
def test_loop_cancel_session_failure_and_secret_figures_are_what_was_generated(
    week: tuple[Path, Path], actor: Actor
) -> None:
    m = analyze(*week)
    got, truth = (m.agent, TRUTH[Actor.AGENT]) if actor is Actor.AGENT else (m.person, TRUTH[Actor.PERSON])
    assert got.experiment_loop_median_s == pytest.approx(truth.median(truth.loop_gaps), abs=1.5)
    assert got.time_to_cancel_median_s == pytest.approx(truth.median(truth.cancel_delays), abs=1.5)
    assert got.session_age_median_h == truth.median(truth.session_spans_h)
    assert got.test_partition_share == pytest.approx(truth.test_jobs / truth.jobs, abs=1e-3)
    assert got.repeated_failures == truth.repeated_failures
    assert (got.secrets_seen, got.secret_users) == (len(truth.secrets), len(truth.secret_users))
    side = MARGINALS[actor]
    assert got.test_partition_share == pytest.approx(side.test_p, abs=0.05)
    if actor is Actor.AGENT:  # the agents loop faster and their sessions last days
        assert got.experiment_loop_median_s < m.person.experiment_loop_median_s
        assert got.session_age_median_h > 48 and m.person.session_age_median_h == 0.0


def test_slurm_accounting_adds_the_jobs_the_gateway_never_saw_and_counts_shared_ones_once(
    week: tuple[Path, Path],
) -> None:
    read = sacct.read(week[1].with_name("sacct.txt"))
    assert read.skipped == 1  # the job step line
    journal_only = analyze_mod.analyze(*week)
    both = analyze(*week)
    assert journal_only.agent.jobs == both.agent.jobs  # every agent job on Slurm is also in the journal
    assert both.person.jobs == TRUTH[Actor.PERSON].jobs
    assert 0.35 < journal_only.person.jobs / both.person.jobs < 0.65  # half of the people's jobs bypass frontdesk


def test_sacct_input_that_is_not_sacct_output_is_one_line_exit_2(week: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "not-sacct.txt"
    bad.write_text("hello world\nthis is not accounting\n")
    exe = Path(sys.executable).parent / "frontdesk"
    out = subprocess.run(
        [str(exe), "analyze", str(week[0]), "--journal", str(week[1]), "--sacct", str(bad)], capture_output=True,
        text=True,
    )  # fmt: skip
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no sacct record" in out.stderr


def test_cli_table_and_json(week: tuple[Path, Path]) -> None:
    exe = Path(sys.executable).parent / "frontdesk"
    out = subprocess.run(
        [str(exe), "analyze", str(week[0]), "--journal", str(week[1]), "--sacct", str(week[1].with_name("sacct.txt")),
         "--json"], capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["agent"] == json.loads(json.dumps(analyze(*week).to_json()))["agent"]
    text = subprocess.run(
        [str(exe), "analyze", str(week[0]), "--journal", str(week[1]), "--sacct", "-"], capture_output=True,
        text=True, input=week[1].with_name("sacct.txt").read_text(),
    )  # fmt: skip
    assert text.stdout.strip() == render(analyze(*week))
    assert "cancel rate" in text.stdout


def test_a_file_that_is_not_an_observe_db_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "x.db"
    bad.write_text("not sqlite")
    exe = Path(sys.executable).parent / "frontdesk"
    out = subprocess.run([str(exe), "analyze", str(bad), "--no-journal"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1


def test_html_report_has_the_table_and_two_figures(week: tuple[Path, Path], tmp_path: Path) -> None:
    import base64
    import re

    exe = Path(sys.executable).parent / "frontdesk"
    out_file = tmp_path / "week.html"
    sacct_file = str(week[1].with_name("sacct.txt"))
    argv = [
        str(exe),
        "analyze",
        str(week[0]),
        "--journal",
        str(week[1]),
        "--sacct",
        sacct_file,
        "--html",
        str(out_file),
    ]
    out = subprocess.run(argv, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    html = out_file.read_text()
    assert "cancel rate" in html and "agents" in html
    pngs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
    assert len(pngs) == 2 and all(base64.b64decode(p).startswith(b"\x89PNG") for p in pngs)


def test_table_and_json_golden(week: tuple[Path, Path]) -> None:
    import os

    golden = Path(__file__).resolve().parents[2] / "golden" / "insight"
    m = analyze(*week)
    for name, rendered in (
        ("analyze.txt", render(m) + "\n"),
        ("analyze.json", json.dumps(m.to_json(), indent=2, sort_keys=True) + "\n"),
    ):
        if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
            (golden / name).write_text(rendered)
        assert rendered == (golden / name).read_text(), f"{name} changed; regenerate on purpose and review"
