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
from frontdesk.reports.render import render_text

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


def _build(case: dict[str, Any]) -> dict[str, Any]:
    rep = build_report(
        case["job"],
        stdout_text=case["out"],
        stderr_text=case["err"],
        attempts=1,
        usage=case["usage"],
        redact=lambda s: s,
    )
    rep["text"] = render_text(rep)
    return rep


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
        case["job"],
        stdout_text="",
        stderr_text=case["err"],
        attempts=1,
        usage=None,
        redact=lambda s: s.replace("abc123SECRET", "«redacted»"),
    )
    assert "abc123SECRET" not in json.dumps(rep)


def test_tail_lines_keep_both_ends() -> None:
    line = "x" * 500 + " the detail"
    (cut,) = tail_lines(line, 1, width=100)
    assert len(cut) <= 100 and cut.startswith("xxx") and cut.endswith("the detail")


@settings(max_examples=60, deadline=None)
@given(out=st.text(max_size=20000), err=st.text(max_size=20000), max_bytes=st.integers(300, 4096))
def test_rendered_report_respects_its_budget(out: str, err: str, max_bytes: int) -> None:
    rep = build_report(
        _job("FAILED", exit_code=2), stdout_text=out, stderr_text=err, attempts=3, usage=None, redact=lambda s: s
    )
    assert len(render_text(rep, max_bytes).encode()) <= max_bytes


def test_plugin_extras_are_rendered_once_each() -> None:
    rep = _build(CASES["oom"])
    rep["extra"] = {
        "memory": {
            "matched": [{"text": "ended OUT_OF_MEMORY twice at 4G; completed at 16G"}],
            "lessons": [{"text": "ended OUT_OF_MEMORY twice at 4G; completed at 16G"}, {"no": "text"}],
        },
        "policy": {"lines": ["class agent (small and short)"]},
    }
    text = render_text(rep)
    assert text.count("memory: ended OUT_OF_MEMORY twice at 4G; completed at 16G") == 1
    assert "policy: class agent (small and short)" in text
