"""Report building and rendering: classification, size bound, redaction hook, golden text."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.reports.build import build_report, suggest_memory, suggest_walltime, tail_lines
from frontdesk.reports.model import (
    LessonSummary,
    MemorySection,
    MemorySuggestion,
    PolicySection,
    Report,
    ReportSection,
    SignatureInfo,
)
from frontdesk.reports.render import render_text
from report_helpers import job_record

GOLDEN = Path(__file__).parents[2] / "golden" / "reports"
G = 1024**3
M = 1024**2


def _job(state: str, **kw: Any) -> dict[str, Any]:
    job = {
        "id": 7,
        "name": "train",
        "state": state,
        "exit_code": kw.pop("exit_code", 0),
        "signal": None,
        "submitted_at": 1000.0,
        "started_at": 1012.5,
        "ended_at": 1400.0,
        "backend": "local",
        "backend_id": "7.1",
        "session": None,
        "reason": kw.pop("reason", None),
        "attempt": 1,
        "spec": {"resources": {"cpus": 4, "memory": 4 * G, "gpus": 1, "walltime": 600}},
    }
    job.update(kw)
    return job


CASES: dict[str, dict[str, Any]] = {
    "completed": dict(
        job=_job("COMPLETED"),
        out="epoch 1 loss 0.52\nsaved ckpt/last.pt\n",
        err="",
        usage={"cpu_seconds": 1490.2, "peak_rss_bytes": 3 * G},
    ),
    "oom": dict(
        job=_job("OUT_OF_MEMORY", exit_code=137, signal=9),
        out="loading shards\n",
        err="slurmstepd: error: Detected 1 oom-kill event(s) in StepId=7.batch\n",
        usage={"cpu_seconds": 20.0, "peak_rss_bytes": int(4.2 * G)},
    ),
    "timeout": dict(
        job=_job("TIMEOUT", exit_code=143, started_at=1000.0, ended_at=1600.4),
        out="step 900\n",
        err="",
        usage={"cpu_seconds": 2300.0, "peak_rss_bytes": 2 * G},
    ),
    "failed": dict(
        job=_job("FAILED", exit_code=1),
        out="starting\n",
        err='Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'flash_attn'\n",
        usage={"cpu_seconds": 0.4},
    ),
    "suspended": dict(
        job=_job("COMPLETED", started_at=1012.5, ended_at=1600.0),
        out="step 900\n",
        err="",
        usage={"cpu_seconds": 1490.2, "peak_rss_bytes": 3 * G, "suspended_s": 187.5},
    ),
    "dependency": dict(
        job=_job(
            "DEPENDENCY_NEVER_SATISFIED",
            exit_code=None,
            started_at=None,
            reason="dependency 6 (FAILED) did not complete",
        ),
        out="",
        err="",
        usage=None,
    ),
}


def _report(case: dict[str, Any]) -> Report:
    rec = job_record(**case["job"], usage=case["usage"])
    rep = build_report(rec, stdout_text=case["out"], stderr_text=case["err"], redact=lambda s: s)
    return rep.with_text(render_text(rep))


def _build(case: dict[str, Any]) -> dict[str, Any]:
    return _report(case).wire()


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_golden(name: str) -> None:
    rep = _build(CASES[name])
    text_file, json_file = GOLDEN / f"{name}.txt", GOLDEN / f"{name}.json"
    rendered = json.dumps(rep, indent=2, sort_keys=True) + "\n"
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        text_file.write_text(rep["text"] + "\n")
        json_file.write_text(rendered)
    assert rep["text"] + "\n" == text_file.read_text()
    assert rendered == json_file.read_text()


def test_classification_and_suggestions() -> None:
    oom = _build(CASES["oom"])
    assert (
        oom["classification"]["kind"] == "host_oom"
        and "--mem 8G (twice the limit" in oom["classification"]["next_step"]
    )
    to = _build(CASES["timeout"])
    assert to["classification"]["kind"] == "walltime" and "--time 21m00s" in to["classification"]["next_step"]
    failed = _build(CASES["failed"])
    assert "ModuleNotFoundError: No module named 'flash_attn'" in failed["classification"]["summary"]
    assert failed["classification"]["kind"] == "missing_import"
    assert "install `flash_attn`" in failed["classification"]["next_step"]
    assert failed["queue_wait_s"] == 12.5 and failed["run_s"] == 387.5


def test_suggestions() -> None:
    assert suggest_memory(int(4.2 * G), 4 * G) == 7 * G
    assert suggest_memory(100 * M, 128 * M) == 192 * M
    assert suggest_walltime(600.4, 600) == 1260
    assert suggest_walltime(None, None) == 120


def test_redactor_applies_to_log_tails() -> None:
    case = dict(CASES["failed"], err="token=abc123SECRET\nError: bad token abc123SECRET\n")
    rep = build_report(
        job_record(**case["job"]),
        stdout_text="",
        stderr_text=case["err"],
        redact=lambda s: s.replace("abc123SECRET", "«redacted»"),
    )
    assert "abc123SECRET" not in json.dumps(rep.wire())


def test_tail_lines_keep_both_ends() -> None:
    line = "x" * 500 + " the detail"
    (cut,) = tail_lines(line, 1, width=100)
    assert len(cut) <= 100 and cut.startswith("xxx") and cut.endswith("the detail")


@settings(max_examples=60, deadline=None)
@given(out=st.text(max_size=20000), err=st.text(max_size=20000), max_bytes=st.integers(300, 4096))
def test_rendered_report_respects_its_budget(out: str, err: str, max_bytes: int) -> None:
    rec = job_record(**_job("FAILED", exit_code=2, attempt=3))
    rep = build_report(rec, stdout_text=out, stderr_text=err, redact=lambda s: s)
    assert len(render_text(rep, max_bytes).encode()) <= max_bytes


def _lesson(text: str, lid: int = 1) -> LessonSummary:
    return LessonSummary(
        id=lid,
        scope="user",
        signature="OUT_OF_MEMORY:host_oom:",
        status="active",
        fact=False,
        fix={"resources": {"memory": 16 * G}},
        times_seen=2,
        times_held=0,
        text=text,
        next_step="resubmit with --mem 16G",
    )


def _enriched() -> Report:
    said = "ended OUT_OF_MEMORY twice at 4G; completed at 16G"
    memory = MemorySection(
        signature=SignatureInfo(
            key="OUT_OF_MEMORY:host_oom:",
            state="OUT_OF_MEMORY",
            kind="host_oom",
            detail="",
            cause="out of host memory",
            normalised_line="slurmstepd: error: Detected <n> oom-kill event(s)",
            matcher="oom-kill",
            next_step="resubmit with more memory",
        ),
        matched=(_lesson(said),),
        lessons=(_lesson(said, 2), _lesson("", 3)),
        suggest=MemorySuggestion(memory_bytes=16 * G, basis="a completed sibling", next_step="--mem 16G"),
    )
    policy = PolicySection(job_class="agent", pool="cpu", class_reason="small and short", trial=False)
    site = ReportSection(lines=["class agent (small and short)"], matched=[{"text": "site rule"}, {"no": "text"}])
    rep = _report(CASES["oom"])
    return rep.with_section("memory", memory).with_section("policy", policy).with_section("site", site)


def test_plugin_extras_are_rendered_once_each() -> None:
    text = render_text(_enriched())
    assert text.count("memory: ended OUT_OF_MEMORY twice at 4G; completed at 16G") == 1
    assert "site: class agent (small and short)" in text and "site: site rule" in text
    assert "policy:" not in text  # its class and pool are in the JSON only


def test_sections_keep_their_json_shape() -> None:
    wire = _enriched().wire()
    extra = wire["extra"]
    assert isinstance(extra, dict)
    assert extra["policy"] == {"class": "agent", "pool": "cpu", "class_reason": "small and short", "trial": False}
    memory = extra["memory"]
    assert isinstance(memory, dict)
    assert list(memory) == ["signature", "lessons", "matched", "suggest"]  # `partition` unset: absent
    assert extra["site"] == {
        "lines": ["class agent (small and short)"],
        "matched": [{"text": "site rule"}, {"no": "text"}],
    }
    revoked = PolicySection(job_class=None, pool=None, class_reason=None, trial=True).model_copy(
        update={"trial_revoked": "trials ran to their cap"}
    )
    assert revoked.wire()["trial_revoked"] == "trials ran to their cap"


def test_the_wire_form_round_trips() -> None:
    for path in sorted(GOLDEN.glob("*.json")):
        data = json.loads(path.read_text())
        if "array" in data:
            continue  # an array's report (reports/arrays.py), not a job's
        again = Report.from_wire(data).wire()
        assert json.dumps(again, indent=2, sort_keys=True) + "\n" == path.read_text(), path.name
    enriched = json.loads(json.dumps(_enriched().wire()))
    back = Report.from_wire(enriched)
    assert isinstance(back.section("memory"), MemorySection) and isinstance(back.section("policy"), PolicySection)
    assert json.dumps(back.wire()) == json.dumps(enriched)  # the key order too (the stored text)


def test_a_report_is_frozen() -> None:
    rep = _report(CASES["failed"])
    with pytest.raises(ValueError):
        rep.job_id = 8  # type: ignore[misc]
    amended = rep.with_next_step("ask for more")
    assert amended.classification.next_step == "ask for more" and rep.classification.next_step != "ask for more"


@pytest.mark.parametrize(
    "usage",
    [
        '{"peak_rss_bytes": "a lot", "cpu_seconds": true, "gpu_util_percent": NaN, "gpu_mem_peak_bytes": [1]}',
        "[1, 2]",
        "not json",
    ],
)
def test_a_bad_usage_reading_is_unknown_never_a_lost_report(usage: str) -> None:
    rec = job_record(**_job("FAILED", exit_code=1), usage=usage)
    rep = build_report(rec, stdout_text="", stderr_text="boom\n", redact=lambda s: s)
    assert rep.used.model_dump() == dict.fromkeys(rep.used.model_dump())
    assert "cpus 4;" in render_text(rep)


def test_usage_figures_keep_their_type() -> None:
    rec = job_record(**_job("COMPLETED"), usage={"cpu_seconds": 12, "peak_rss_bytes": 2048.0, "extra": 1})
    used = build_report(rec, stdout_text="", stderr_text="", redact=lambda s: s).wire()["used"]
    assert used == {"cpu_seconds": 12, "peak_rss_bytes": 2048.0, "gpu_util_percent": None, "gpu_mem_peak_bytes": None}
    assert isinstance(used["cpu_seconds"], int) and isinstance(used["peak_rss_bytes"], float)


def test_time_suspended_is_told_and_not_counted_as_run_against_the_limit() -> None:
    rep = _build(CASES["suspended"])
    assert rep["suspended_s"] == 187.5 and rep["run_s"] == 587.5
    assert "ran 9m48s (3m08s of it suspended for trials)" in rep["text"]
    assert "suspended_s" not in _build(CASES["completed"])  # a job never suspended: no key, goldens unchanged
    # a job that timed out after a suspension: the advice counts the time it ran, not the time it was frozen
    frozen = dict(CASES["timeout"])
    frozen["job"] = _job("TIMEOUT", exit_code=143, started_at=1000.0, ended_at=1900.4)
    frozen["usage"] = {"cpu_seconds": 2300.0, "peak_rss_bytes": 2 * G, "suspended_s": 300.0}
    assert "--time 21m00s" in _build(frozen)["classification"]["next_step"]
