"""Real traces: FCFS, textbook EASY, frontdesk's EASY and the frontdesk policy, side by side, per trace.

    python bench/trace_compare.py TRACE_DIR_OR_FILES...   (see bench/get_traces.py for where traces come from)
    python bench/trace_compare.py --jobs 5000 DIR          (the first 5,000 jobs of each)
    python bench/trace_compare.py --rlscheduler DIR        (RLScheduler's table, theirs beside ours)
    python bench/trace_compare.py --overlay DIR            (hpc jobs alone and under an agent overlay, and the
                                                            floor under trial waits for any policy)
    python bench/trace_compare.py --agent-nodes 32 DIR     (the smallest agent partition of 32-core nodes outside
                                                            the machine for trial p95 <= 30 s, hpc beside it)
    python bench/trace_compare.py --overlay --suspend DIR  (frontdesk with and without preemption by suspension
                                                            beside textbook EASY, under the agent overlay)

Each trace is replayed on its own machine (header MaxProcs/MaxNodes), cleaned with the default options (zero-runtime
jobs dropped, requests below runtime extended), jobs wider than the machine refused; the reader's report is printed.
Figures: mean bounded slowdown (tau = 10 s) and mean wait, for all jobs and for the large jobs alone (wider than
1/8 of the machine). The last column is frontdesk / textbook EASY for bounded slowdown; "WORSE" marks > 5 %.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.sim.compare import AgentNodes, load_workload, run  # noqa: E402
from frontdesk.sim.engine import JobRecord  # noqa: E402
from frontdesk.sim.metrics import bounded_slowdown, percentile  # noqa: E402
from frontdesk.sim.overlay import overlay_agents  # noqa: E402
from frontdesk.sim.rlsched import SEQUENCE, RlTrace, gym_starts, parse_rl_trace, schedule_sequence  # noqa: E402
from frontdesk.sim.swf import Machine  # noqa: E402
from frontdesk.sim.trialbound import delay_budget, dodge_budget, inputs, trial_bound  # noqa: E402
from frontdesk.sim.workload import SimJob, Workload  # noqa: E402

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

    # a suspended job's wait includes its time suspended (0 for every policy but frontdesk-suspend)
    return (
        mean([bounded_slowdown(r) for r in done]),
        mean([r.start - r.submit + r.suspended for r in done]),  # type: ignore[operator]
        mean([bounded_slowdown(r) for r in large]),
        mean([r.start - r.submit + r.suspended for r in large]),  # type: ignore[operator]
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


# RLScheduler's README table (bounded slowdown; FCFS without / with its backfilling), its file names, and
# its batch_job_slice (sequences drawn from the first 10,000 jobs of the real traces).
PUBLISHED = {
    "lublin_256.swf": ("Lublin-1", 7273.77, 235.82, 0),
    "lublin_256_new2.swf": ("Lublin-2", 7842.47, 247.61, 0),
    "HPC2N-2002-2.2-cln.swf": ("HPC2N", 297.18, 127.38, 10_000),
    "SDSC-SP2-1998-4.2-cln.swf": ("SDSC-SP2", 1727.54, 1595.12, 10_000),
}
OURS_ON_SEQUENCES = (("easy-textbook", "EASY (textbook)"), ("slurm", "Slurm backfill"), ("frontdesk", "frontdesk"))


def _sequence_workload(trace: RlTrace, first: int, name: str) -> Workload:
    """RLScheduler's 1,024 jobs as our workload, on its machine (requests below the runtime extended)."""
    jobs = [
        SimJob(
            f"r{j.number}", float(j.submit), float(j.runtime), float(max(j.requested, j.runtime)), j.procs, f"u{j.user}"
        )
        for j in trace.jobs[first : first + SEQUENCE]
    ]
    return Workload(name, jobs, 0.0, None, "swf", Machine(trace.procs, trace.nodes, name))


def rl_table(paths: list[Path]) -> int:
    """Its protocol (10 sequences of 1,024 jobs, seed 1) with its rules and ours; mean of per-sequence bsld."""
    print("RLScheduler (SC20) protocol: 10 sequences x 1,024 jobs, seed 1; mean bounded slowdown (tau 10 s)")
    hdr = f"{'trace':<10}{'':>4}{'FCFS pub.':>11}{'FCFS ours':>11}{'diff':>8}{'FCFS+bf pub.':>14}{'ours':>9}{'diff':>8}"
    print(hdr + "".join(f"{label:>18}" for _, label in OURS_ON_SEQUENCES))
    found = 0
    for path in paths:
        name = path.name.removesuffix(".gz")
        if name not in PUBLISHED:
            continue
        found += 1
        label, pub_fcfs, pub_bf, batch = PUBLISHED[name]
        raw = path.read_bytes()
        trace = parse_rl_trace((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode())
        firsts = gym_starts(len(trace.jobs), batch_slice=batch)
        mine: dict[str, list[float]] = {"fcfs": [], "bf": [], **{k: [] for k, _ in OURS_ON_SEQUENCES}}
        for first in firsts:
            seq = trace.jobs[first : first + SEQUENCE]
            for key, bf in (("fcfs", False), ("bf", True)):
                st = schedule_sequence(trace, first, bf)
                mine[key].append(sum(max(1.0, (st[j.number] - j.submit + j.runtime) / max(j.runtime, 10)) for j in seq))
            wl = _sequence_workload(trace, first, label)
            for spec, _ in OURS_ON_SEQUENCES:
                mine[spec].append(sum(bounded_slowdown(r) for r in run(wl, spec).records))
        avg = {k: sum(v) / len(v) / SEQUENCE for k, v in mine.items()}
        d1, d2 = avg["fcfs"] / pub_fcfs - 1, avg["bf"] / pub_bf - 1
        line = f"{label:<10}{'':>4}{pub_fcfs:>11.2f}{avg['fcfs']:>11.2f}{d1:>+8.2%}"
        line += f"{pub_bf:>14.2f}{avg['bf']:>9.2f}{d2:>+8.2%}"
        print(line + "".join(f"{avg[k]:>18.2f}" for k, _ in OURS_ON_SEQUENCES), flush=True)
    if not found:
        print(f"trace_compare: none of {', '.join(PUBLISHED)} given (see bench/get_traces.py)", file=sys.stderr)
        return 66
    return 0


OVERLAY_POLICIES = (
    ("easy-textbook", "EASY (textbook)"),
    ("slurm", "Slurm backfill"),
    ("slurm-frontdesk", "Slurm + fd nice"),
    ("frontdesk", "frontdesk"),
)
SLICE_SHARE = 16
"""The agent slice row keeps 1/16 of the machine for agent work (`frontdesk-sliceN`)."""


def _hpc_agent(records: list[JobRecord], large_from: int) -> list[float]:
    """hpc bsld, hpc wait, large-hpc bsld, large-hpc wait, agent wait p95, agent mean wait, agent jobs, share of
    agent jobs started within 30 s."""
    done = [r for r in records if r.start is not None and r.end is not None]
    hpc = [r for r in done if not r.job.agent]
    agent = [r.start - r.submit for r in done if r.job.agent]  # type: ignore[operator]
    figs = list(_figures(hpc, large_from))
    quick = sum(w <= 30 for w in agent) / len(agent) if agent else 0.0
    mean = sum(agent) / len(agent) if agent else 0.0
    return [*figs, percentile(agent, 95) if agent else 0.0, mean, len(agent), quick]


def _overlaid(path: Path, jobs: int | None) -> tuple[Workload, int, Workload]:
    """A trace (its first `jobs`), the width from which its jobs count as large, and the trace with agents laid over."""
    wl = load_workload(str(path))
    if jobs:
        wl = Workload(wl.name, wl.jobs[:jobs], 0.0, None, "swf", wl.machine, wl.swf)
    assert wl.machine is not None
    return wl, wl.machine.procs // 8, overlay_agents(wl)


def overlay_table(path: Path, jobs: int | None) -> None:
    """hpc figures on the trace alone and with the agent overlay, and the agents' waits, per policy."""
    wl, large_from, mixed = _overlaid(path, jobs)
    print(f"\n== {path.name}: {len(wl.jobs)} hpc jobs, + {len(mixed.jobs) - len(wl.jobs)} agent jobs in the overlay")
    head = f"{'policy':<18}{'workload':<10}{'hpc bsld':>10}{'hpc wait':>10}{'large bsld':>11}{'large wait':>11}"
    print(head + f"{'agent p95':>10}{'agent mean':>11}{'<=30s':>7}{'CPU s':>7}")
    rows: dict[tuple[str, str], list[float]] = {}
    share = max(1, wl.machine.procs // SLICE_SHARE)
    for spec, label in (*OVERLAY_POLICIES, (f"frontdesk-slice{share}", f"fd + slice {share}")):
        for tag, w in (("alone", wl), ("+agents", mixed)):
            t0 = time.process_time()
            rows[spec, tag] = f = _hpc_agent(run(w, spec).records, large_from)
            agents = f"{f[4]:>9.0f}s{f[5]:>10.0f}s{f[7]:>7.1%}" if tag != "alone" else f"{'-':>10}{'-':>11}{'-':>7}"
            line = f"{label:<18}{tag:<10}{f[0]:>10.2f}{f[1]:>9.0f}s{f[2]:>11.2f}{f[3]:>10.0f}s"
            print(line + agents + f"{time.process_time() - t0:>7.1f}", flush=True)
    _print_bound(mixed, wl.machine.procs, rows["easy-textbook", "+agents"], large_from)
    for spec in ("frontdesk", f"frontdesk-slice{share}"):
        for tag in ("alone", "+agents"):
            fd, tb = rows[spec, tag], rows["easy-textbook", tag]
            ratios = [fd[k] / tb[k] if tb[k] else float("nan") for k in range(4)]
            print(
                f"   {spec} / EASY, hpc jobs {tag} (bsld, wait, large bsld, large wait): "
                + " ".join(f"{r:.3f}" for r in ratios)
                + ("  WORSE (> 1.05)" if max(ratios) > 1.05 else "")
            )


SUSPEND_ROWS = (
    ("easy-textbook", "EASY (textbook)"),
    ("frontdesk", "frontdesk"),
    ("frontdesk-suspend-share", "fd + susp. share"),
    ("frontdesk-suspend", "fd + suspend"),
)


def suspend_table(path: Path, jobs: int | None) -> None:
    """Under the agent overlay: textbook EASY, frontdesk, and frontdesk whose blocked short trials suspend
    running hpc jobs (sim/suspend.py); hpc figures count the time suspended as waiting."""
    wl, large_from, mixed = _overlaid(path, jobs)
    print(f"\n== {path.name}: {len(wl.jobs)} hpc jobs + {len(mixed.jobs) - len(wl.jobs)} agent trials, suspension")
    head = f"{'policy':<18}{'hpc bsld':>10}{'hpc wait':>10}{'large bsld':>11}{'large wait':>11}{'trial p95':>10}"
    print(head + f"{'<=30s':>7}{'suspended jobs':>15}{'max susp.':>10}{'CPU s':>7}")
    rows: dict[str, list[float]] = {}
    for spec, label in SUSPEND_ROWS:
        t0 = time.process_time()
        res = run(mixed, spec)
        rows[spec] = f = _hpc_agent(res.records, large_from)
        paused = [r for r in res.records if r.pauses]
        hpc = sum(1 for r in res.records if not r.job.agent)
        most = max((r.suspended for r in paused), default=0.0)
        line = f"{label:<18}{f[0]:>10.2f}{f[1]:>9.0f}s{f[2]:>11.2f}{f[3]:>10.0f}s{f[4]:>9.0f}s{f[7]:>7.1%}"
        print(line + f"{len(paused):>7} ({len(paused) / hpc:>4.1%}){most:>9.0f}s{time.process_time() - t0:>7.1f}")
    tb = rows["easy-textbook"]
    for spec in ("frontdesk", "frontdesk-suspend-share", "frontdesk-suspend"):
        ratios = [rows[spec][k] / tb[k] if tb[k] else float("nan") for k in range(4)]
        met = rows[spec][4] <= 30.0 and max(ratios) <= 1.10
        print(
            f"   {spec} / EASY (hpc bsld, wait, large bsld, large wait): "
            + " ".join(f"{r:.3f}" for r in ratios)
            + f"; trial p95 {rows[spec][4]:.0f} s: goal (p95 <= 30 s, all four <= 1.10 EASY) "
            + ("MET" if met else "not met"),
            flush=True,
        )


def _print_bound(mixed: Workload, procs: int, easy: list[float], large_from: int) -> None:
    """The floor under trial waits for ANY non-preemptive policy running every hpc job (sim/trialbound.py),
    with hpc bsld within 10 % of textbook EASY's: all hpc jobs, and all and large ones together."""
    hpc, trials = inputs(mixed.jobs, procs)
    large = [j for j in hpc if j.cpus > large_from]
    w_all = delay_budget(hpc, procs, 1.10 * easy[0])
    w_both = min(w_all, delay_budget(large, procs, 1.10 * easy[2]))
    for label, w in (("all-hpc bsld <= 1.1 EASY", w_all), ("+ large-hpc bsld <= 1.1 EASY", w_both)):
        b = trial_bound(hpc, trials, procs, w)
        print(
            f"   any policy, {label}: {b.blocking} jobs wider than half the machine; at least {b.late_30} of "
            f"{b.trials} trials ({b.late_30_share:.1%}) wait > 30 s; trial wait p95 >= {b.p95_floor:.0f} s"
            + ("  => p95 <= 30 s IMPOSSIBLE" if b.p95_floor > 30 else ""),
            flush=True,
        )
    now = trial_bound(hpc, trials, procs, 0.0)
    dodge = dodge_budget(hpc, trials, procs)
    print(
        f"   every wide job started at its submission: at least {now.late_30_share:.1%} of trials wait > 30 s, "
        f"p95 >= {now.p95_floor:.0f} s; starting them between the floods instead needs a delay budget of "
        f"{dodge:.1f} run-lengths (mean hpc bsld +{dodge / len(hpc):.4f} at most; the 10 % bound leaves "
        f"{w_all / len(hpc):.1f} per job)",
        flush=True,
    )


def _smallest_agent_nodes(mixed: Workload, cores: int) -> tuple[int, list[float]]:
    """The fewest agent nodes of `cores` on which the trials' wait p95 is <= 30 s (the agent stream alone:
    it never shares a node with the trace's jobs), and that run's figures."""
    only = replace(mixed, jobs=[j for j in mixed.jobs if j.agent])

    def p95(n: int) -> list[float]:
        return _hpc_agent(run(only, "frontdesk", AgentNodes(n, cores)).records, 1 << 30)

    n, hi = 1, None
    while (f := p95(n))[4] > 30.0:
        n *= 2
    hi, f_hi = n, f
    lo = n // 2 + 1 if n > 1 else 1
    while lo < hi:
        mid = (lo + hi) // 2
        f = p95(mid)
        if f[4] <= 30.0:
            hi, f_hi = mid, f
        else:
            lo = mid + 1
    return hi, f_hi


def agent_nodes_table(path: Path, jobs: int | None, cores: int) -> None:
    """Per trace: the smallest agent partition outside the machine for trial p95 <= 30 s, and the hpc
    figures with it against the trace alone (frontdesk's policy on both)."""
    wl, large_from, mixed = _overlaid(path, jobs)
    n, f = _smallest_agent_nodes(mixed, cores)
    t0 = time.process_time()
    alone = _hpc_agent(run(wl, "frontdesk").records, large_from)
    both = _hpc_agent(run(mixed, "frontdesk", AgentNodes(n, cores)).records, large_from)
    ratios = " ".join(f"{both[k] / alone[k]:.3f}" if alone[k] else "-" for k in range(4))
    print(
        f"{wl.name:<34}{wl.machine.procs:>6}{n:>7} x {cores:<4}{both[4]:>9.0f}s{both[7]:>8.1%}"
        f"{alone[0]:>15.2f}{both[0]:>9.2f}{alone[3]:>18.0f}s{both[3]:>10.0f}s   {ratios}"
        f"{time.process_time() - t0:>7.1f}",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", help="SWF files or folders of them")
    ap.add_argument("--jobs", type=int, help="only the first N jobs of each trace")
    ap.add_argument("--rlscheduler", action="store_true", help="RLScheduler's protocol and published table")
    ap.add_argument("--overlay", action="store_true", help="hpc jobs alone and under the agent overlay")
    ap.add_argument(
        "--suspend", action="store_true", help="with --overlay: frontdesk with preemption by suspension, beside EASY"
    )
    ap.add_argument(
        "--agent-nodes",
        type=int,
        metavar="CORES",
        help="the smallest agent partition (nodes of CORES) outside the machine for trial p95 <= 30 s",
    )
    args = ap.parse_args()
    paths = _traces(args.traces)
    if not paths:
        print("trace_compare: no .swf files found (see bench/get_traces.py)", file=sys.stderr)
        return 66
    if args.rlscheduler:
        return rl_table(paths)
    if args.agent_nodes:
        head = (
            f"{'trace':<34}{'procs':>6}{'agent nodes':>14}{'trial p95':>10}{'<=30s':>8}{'hpc bsld alone, +agents':>24}"
        )
        print(head + "  large-hpc wait alone, +agents   (+agents / alone: bsld, wait, large bsld, large wait)  CPU s")
        for p in paths:
            agent_nodes_table(p, args.jobs, args.agent_nodes)
        return 0
    if args.overlay and args.suspend:
        for p in paths:
            suspend_table(p, args.jobs)
        return 0
    if args.overlay:
        for p in paths:
            overlay_table(p, args.jobs)
        return 0
    for p in paths:
        compare_trace(p, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
