#!/usr/bin/env python3
"""The typed Report against the dict report it replaced, side by side in one run (pure: no gateway).

    .venv/bin/python bench/report_typed.py [--rounds 2000] [--baseline REV]

For a failed job with a 64 KiB log and memory's and policy's sections, times building the report,
adding two plug-in sections, rendering its text and dumping its JSON: the current code (reports/model.py
`Report`, `wire()`) against the dict code of git revision REV (default 9f97995, before the typed Report),
loaded from `git show` into a private package so both run in this process, interleaved. Prints the
microseconds per report of each (best batch) and the ratio; checks both give the same JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from frontdesk.reports.build import build_report  # noqa: E402
from frontdesk.reports.model import LessonSummary, MemorySection, PolicySection  # noqa: E402
from frontdesk.reports.render import render_text  # noqa: E402
from report_helpers import job_record  # noqa: E402  (tests/report_helpers.py)

G = 1024**3
LOG = "".join(f"step {i} loss {1 / (i + 1):.4f} lr 3e-4 tokens/s 51234\n" for i in range(1200))
ERR = LOG[:4000] + "Traceback (most recent call last):\nModuleNotFoundError: No module named 'flash_attn'\n"
JOB = dict(
    id=7,
    name="train",
    state="FAILED",
    exit_code=1,
    submitted_at=1000.0,
    started_at=1012.5,
    ended_at=1400.0,
    backend="local",
    backend_id="7.1",
    spec={"command": ["python", "train.py"], "resources": {"cpus": 4, "memory": 4 * G, "walltime": 600}},
    usage={"cpu_seconds": 1490.2, "peak_rss_bytes": 3 * G},
)
LESSON = dict(
    id=1,
    scope="user",
    signature="FAILED:missing_import:flash_attn",
    status="active",
    fact=False,
    fix={"text": "pip install flash-attn"},
    times_seen=3,
    times_held=1,
    text="failed 3 times on flash_attn; fixed by pip install flash-attn",
    next_step="install `flash_attn`",
)
POLICY = {"class": "training", "pool": "gpu", "class_reason": "asks a GPU", "trial": False}
REC = job_record(**JOB)
"""The ended job's record, as the store hands it to core/ending.make_report (both paths start from it)."""


def _old_modules(rev: str) -> tuple[Callable[..., dict[str, Any]], Callable[..., str]]:
    """build_report and render_text of revision `rev`, as a private copy of frontdesk.reports."""
    pkg = types.ModuleType("old_reports")
    pkg.__path__ = []
    sys.modules["old_reports"] = pkg
    out = {}
    for name in ("build", "render"):
        src = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:src/frontdesk/reports/{name}.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        mod = types.ModuleType(f"old_reports.{name}")
        sys.modules[mod.__name__] = mod
        exec(compile(src, f"{rev}:reports/{name}.py", "exec"), mod.__dict__)
        out[name] = mod
    return out["build"].build_report, out["render"].render_text


def _new(log: str = LOG, err: str = ERR) -> str:
    rep = build_report(REC, stdout_text=log, stderr_text=err, redact=lambda s: s)
    memory = MemorySection(signature=None, lessons=(LessonSummary(**LESSON),), matched=())
    rep = rep.with_section("memory", memory).with_section("policy", PolicySection.model_validate(POLICY))
    rep = rep.with_text(render_text(rep))
    return json.dumps(rep.wire())


def _old(build: Callable[..., dict[str, Any]], render: Callable[..., str], log: str = LOG, err: str = ERR) -> str:
    job, usage = REC.public(), json.loads(REC.usage or "null")  # what make_report did before
    rep = build(job, stdout_text=log, stderr_text=err, attempts=REC.attempt, usage=usage, redact=lambda s: s)
    rep["extra"]["memory"] = {"signature": None, "lessons": [dict(LESSON)], "matched": []}
    rep["extra"]["policy"] = dict(POLICY)
    rep["text"] = render(rep)
    return json.dumps(rep)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--baseline", default="9f97995")
    args = ap.parse_args()
    build, render = _old_modules(args.baseline)
    assert _new() == _old(build, render), "the two give different JSON"  # the same text, key order too
    short = (LOG[:600], ERR[-400:])
    print(f"report built, 2 sections added, rendered, dumped ({args.rounds} rounds, interleaved, best batch):")
    for label, (out, err) in (("64 KiB of logs", (LOG, ERR)), ("1 KiB of logs", short)):
        med = _race(partial(_old, build, render, out, err), partial(_new, out, err), args.rounds)
        print(f"  {label}: dict ({args.baseline}) {med['dict']:8.1f} us, typed {med['typed']:8.1f} us", end="")
        print(f", typed / dict {med['typed'] / med['dict']:.2f}x")


def _race(old: Callable[[], str], new: Callable[[], str], rounds: int) -> dict[str, float]:
    """Microseconds per report of each: the best batch of 20 (timeit's rule: on a shared machine the
    fastest batch is the one least disturbed), batches alternating which goes first."""
    times: dict[str, list[float]] = {"dict": [], "typed": []}
    runs = [("dict", old), ("typed", new)]
    for i in range(max(1, rounds // 20)):
        for name, fn in runs if i % 2 else runs[::-1]:
            t0 = time.perf_counter()
            for _ in range(20):
                fn()
            times[name].append((time.perf_counter() - t0) / 20)
    return {k: min(v) * 1e6 for k, v in times.items()}


if __name__ == "__main__":
    main()
