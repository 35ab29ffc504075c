"""Real traces: FCFS, textbook EASY, frontdesk's EASY and the frontdesk policy, side by side, per trace.

    python bench/trace_compare.py TRACE_DIR_OR_FILES...   (see bench/get_traces.py for where traces come from)
    python bench/trace_compare.py --jobs 5000 DIR          (the first 5,000 jobs of each)

Each trace is replayed on its own machine (header MaxProcs/MaxNodes), cleaned with the default options (zero-runtime
jobs dropped, requests below runtime extended), jobs wider than the machine refused; the reader's report is printed.
Figures: mean bounded slowdown (tau = 10 s) and mean wait, for all jobs and for the large jobs alone (wider than
1/8 of the machine). The last column is frontdesk / textbook EASY for bounded slowdown; "WORSE" marks > 5 %.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.sim.compare import load_workload, run  # noqa: E402
from frontdesk.sim.engine import JobRecord  # noqa: E402
from frontdesk.sim.metrics import bounded_slowdown  # noqa: E402
from frontdesk.sim.workload import Workload  # noqa: E402

POLICIES = (
    ("fcfs", "FCFS"),
    ("easy-textbook", "EASY (textbook)"),
    ("easy", "EASY (frontdesk)"),
    ("frontdesk", "frontdesk"),
)


def _figures(records: list[JobRecord], large_from: int) -> tuple[float, float, float, float]:
    done = [r for r in records if r.start is not None and r.end is not None]
    large = [r for r in done if r.job.cpus > large_from]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    return (
        mean([bounded_slowdown(r) for r in done]),
        mean([r.start - r.submit for r in done]),  # type: ignore[operator]
        mean([bounded_slowdown(r) for r in large]),
        mean([r.start - r.submit for r in large]),  # type: ignore[operator]
    )


def _traces(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for a in args:
        p = Path(a)
        out += sorted([*p.glob("*.swf"), *p.glob("*.swf.gz")]) if p.is_dir() else [p]
    return out


def compare_trace(path: Path, jobs: int | None) -> None:
    wl = load_workload(str(path))
    if jobs:
        wl = Workload(wl.name, wl.jobs[:jobs], 0.0, None, "swf", wl.machine, wl.swf)
    assert wl.machine is not None and wl.swf is not None
    large_from = wl.machine.procs // 8
    print(f"\n== {path.name}: {len(wl.jobs)} jobs replayed")
    print("\n".join("   " + line for line in wl.swf.lines_text()))
    print(f"{'policy':<18}{'bsld all':>10}{'wait all':>11}{'bsld large':>12}{'wait large':>12}{'CPU s':>8}")
    rows = {}
    for spec, label in POLICIES:
        t0 = time.process_time()
        res = run(wl, spec)
        rows[spec] = _figures(res.records, large_from)
        b, w, bl, wlg = rows[spec]
        print(f"{label:<18}{b:>10.2f}{w:>10.0f}s{bl:>12.2f}{wlg:>11.0f}s{time.process_time() - t0:>8.1f}", flush=True)
    fd, tb = rows["frontdesk"], rows["easy-textbook"]
    for k, name in ((0, "bsld all"), (1, "wait all"), (2, "bsld large"), (3, "wait large")):
        ratio = fd[k] / tb[k] if tb[k] else float("nan")
        flag = "  WORSE than textbook EASY" if ratio > 1.05 else ""
        print(f"   frontdesk / textbook EASY, {name}: {ratio:.2f}{flag}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", help="SWF files or folders of them")
    ap.add_argument("--jobs", type=int, help="only the first N jobs of each trace")
    args = ap.parse_args()
    paths = _traces(args.traces)
    if not paths:
        print("trace_compare: no .swf files found (see bench/get_traces.py)", file=sys.stderr)
        return 66
    for p in paths:
        compare_trace(p, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
