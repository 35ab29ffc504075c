"""The dashboard at `/` on a real gateway: jobs with their state and report classification, a click-through
to the report, the refreshing part changing when a job ends, and user text escaped."""

from __future__ import annotations

import re
from typing import Any

import httpx


def _get(gw: Any, path: str) -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=30) as http:
        return http.get(f"http://gateway{path}")


def _submit(gw: Any, tmp_path: Any, name: str, *cmd: str) -> int:
    body = {"spec": {"name": name, "command": list(cmd)}, "context": {"cwd": str(tmp_path)}}
    return int(gw.client.request("POST", "/v1/jobs", body)["id"])


def test_the_page_shows_jobs_updates_when_one_ends_and_links_to_its_report(gateway_factory: Any, tmp_path: Any) -> None:
    gw = gateway_factory()
    ok = _submit(gw, tmp_path, "dash-ok", "sh", "-c", "echo hello-dashboard")
    bad = _submit(
        gw,
        tmp_path,
        "dash-bad",
        "sh",
        "-c",
        "echo 'ModuleNotFoundError: No module named x' >&2; exit 1",
    )
    gw.wait_state(ok, {"COMPLETED"})
    gw.wait_state(bad, {"FAILED"})
    slow = _submit(gw, tmp_path, "dash-slow", "sleep", "30")
    gw.wait_state(slow, {"RUNNING"})
    page = _get(gw, "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "dash-ok" in page.text and "COMPLETED" in page.text and f'href="/ui/jobs/{ok}"' in page.text
    assert "setInterval" in page.text  # the refreshing script, inline
    row = re.search(rf"<tr><td>{bad}</td>.*?</tr>", page.text)
    assert row and "FAILED" in row.group(0) and "missing_import" in row.group(0)
    before = _get(gw, "/?part=main").text
    assert before.startswith('<div id="main">') and re.search(rf"<tr><td>{slow}</td>.*?RUNNING", before)
    gw.cli("cancel", str(slow))
    gw.wait_state(slow, {"CANCELLED"})
    after = _get(gw, "/?part=main").text
    assert re.search(rf"<tr><td>{slow}</td>.*?CANCELLED", after)
    # user text reaches the page through the guard's journal: only checked here, never run
    check = gw.cli("guard", "check", "--", "rm", "-rf", "/", "<script>alert(1)</script>", cwd=tmp_path)
    assert check.returncode == 2, check.stdout
    page = _get(gw, "/").text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "fs.rm-root" in page
    report = _get(gw, f"/ui/jobs/{ok}")
    assert report.status_code == 200 and f"job {ok}" in report.text and "COMPLETED" in report.text
    assert _get(gw, "/ui/jobs/999999").status_code == 404


POLICY = """
[local]
cpus = 2
memory = "2G"

[policy]
[[policy.pools]]
name = "agentpool"
classes = ["agent", "inference"]
cpus = 1

[[policy.pools]]
name = "batchpool"
classes = ["hpc", "training"]
cpus = 1
"""


def _panel(page: str, title: str) -> str:
    m = re.search(rf"<h2>{title}</h2>(.*?)(?=<h2>|</div>)", page, flags=re.S)
    assert m, f"no {title} panel"
    return m.group(1)


def test_the_page_shows_each_plugins_panel_for_the_caller(gateway_factory: Any, tmp_path: Any) -> None:
    gw = gateway_factory(config=POLICY)
    sid = "dash-session-1"
    body = {
        "spec": {
            "name": "dash-lesson",
            "command": ["sh", "-c", "echo 'ModuleNotFoundError: No module named zzq' >&2; exit 1"],
        },
        "context": {"cwd": str(tmp_path), "session": sid, "harness": "claude-code"},
    }
    job = int(gw.client.request("POST", "/v1/jobs", body)["id"])
    gw.wait_state(job, {"FAILED"})
    page = _get(gw, "/").text
    pools = _panel(page, "Pools and trials")
    assert "agentpool" in pools and "batchpool" in pools and "trial privilege held" in pools
    lessons = _panel(page, "Lessons")
    assert "missing_import" in lessons and "zzq" in lessons
    sessions = _panel(page, "Sessions")
    row = re.search(rf"<tr><td>{sid}</td>.*?</tr>", sessions)
    assert row and "claude-code" in row.group(0) and row.group(0).endswith("<td>1</td></tr>")  # one unread report
    assert _panel(_get(gw, "/?part=main").text, "Lessons") == lessons  # the refreshing part has them too


def test_the_page_shows_the_sites_observe_figures_agents_against_people(gateway_factory: Any, tmp_path: Any) -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "telemetry"))
    from synthetic import generate

    from frontdesk.telemetry.analyze import analyze

    observe = tmp_path / "observe.db"
    generate(observe, tmp_path / "unused-journal.db")
    gw = gateway_factory(config=f'[telemetry]\nobserve_db = "{observe}"\n')
    job = _submit(gw, tmp_path, "dash-insight", "true")
    gw.wait_state(job, {"COMPLETED"})
    panel = _panel(_get(gw, "/").text, "Agents against people")
    want = analyze(observe, gw.home / "frontdesk.db")
    row = re.search(r"<tr><td>commands</td><td>([^<]*)</td><td>([^<]*)</td></tr>", panel)
    assert row and (int(row.group(1)), int(row.group(2))) == (want.agent.commands, want.person.commands)
    assert "<td>cancel rate</td>" in panel and "<td>experiment loop median s</td>" in panel
    assert "observed minutes" in panel
