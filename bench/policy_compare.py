"""The issue's criteria for frontdesk's policy beside FIFO and EASY backfill, measured in one run.

    .venv/bin/python bench/policy_compare.py [--seed N] [--plots]

Workloads: the validation mix (50 agent jobs of ~5 min, 2 training jobs of 4 nodes x 8 GPUs, one
256-core hpc job, on a 12-node cluster), a generated agent-heavy day on the 100-node cluster (the
published defaults; 6 h of warm-up before the measured day), and the same day with 1.4x the training and
hpc submissions. `--plots` writes PNGs into docs/.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from frontdesk.sim.cluster import assign_pools, build_cluster, default_policy
from frontdesk.sim.compare import make_policy
from frontdesk.sim.engine import SimResult, simulate
from frontdesk.sim.metrics import summarize
from frontdesk.sim.workload import AgentMix, Workload, agent_day, validation_mix

POLICIES = ("fifo", "easy", "frontdesk")
HEAVY = AgentMix(training_jobs_per_day=210, hpc_jobs_per_day=280)
"""The same day with 1.4x the training and hpc submissions: big jobs queue, small ones must not."""
DOCS = Path(__file__).resolve().parents[1] / "docs"


def run(wl: Workload) -> dict[str, tuple[SimResult, dict[str, Any], float]]:
    out = {}
    for name in POLICIES:
        pol = make_policy(name, wl)
        nodes = assign_pools(build_cluster(wl.cluster), getattr(pol, "cfg", None) or default_policy(wl.cluster))
        t0 = time.process_time()
        res = simulate(wl, nodes, pol, trace=True)
        out[name] = (res, summarize(res), time.process_time() - t0)
    return out


def criteria(results: dict[str, tuple[SimResult, dict[str, Any], float]]) -> list[str]:
    s = {k: v[1] for k, v in results.items()}
    easy_hpc = s["easy"]["classes"].get("hpc", {}).get("bsld", {}).get("mean", 1.0)
    rows = [
        (
            "mean agent wait (s)",
            "< 30",
            lambda x: x["classes"]["agent"]["wait_s"]["mean"],
            lambda v: v < 30,
            "{:.1f}",
        ),
        (
            "max training wait, resources free (s)",
            "<= 300",
            lambda x: x["training_wait_when_free_max_s"],
            lambda v: v <= 300,
            "{:.1f}",
        ),
        (
            "hpc jobs preempted",
            "0",
            lambda x: x["classes"].get("hpc", {}).get("preempted", 0),
            lambda v: v == 0,
            "{:d}",
        ),
        (
            "hpc bounded slowdown / EASY's",
            "<= 1.10",
            lambda x: x["classes"].get("hpc", {}).get("bsld", {}).get("mean", 1.0) / easy_hpc,
            lambda v: v <= 1.10,
            "{:.3f}",
        ),
        ("GPU utilisation", ">= 60%", lambda x: 100 * x["gpu_util"], lambda v: v >= 60, "{:.1f}%"),
        (
            "mean trial wait (s)",
            "",
            lambda x: x["classes"].get("trial", {}).get("wait_s", {}).get("mean", 0.0),
            None,
            "{:.1f}",
        ),
        ("p95 agent wait (s)", "", lambda x: x["classes"]["agent"]["wait_s"]["p95"], None, "{:.1f}"),
        ("bounded slowdown, all jobs", "", lambda x: x["bsld_mean"], None, "{:.3f}"),
        ("CPU utilisation", "", lambda x: 100 * x["cpu_util"], None, "{:.1f}%"),
        ("fairness (Jain, per-principal bsld)", "", lambda x: x["fairness_jain"], None, "{:.3f}"),
        ("trial privileges revoked", "", lambda x: len(x["trial_revocations"]), None, "{:d}"),
    ]
    lines = [f"{'criterion':<40}{'target':>9}" + "".join(f"{p:>12}" for p in POLICIES) + "   frontdesk"]
    for label, target, get, ok, fmt in rows:
        vals = [get(s[p]) for p in POLICIES]
        verdict = "" if ok is None else ("PASS" if ok(vals[-1]) else "FAIL")
        lines.append(f"{label:<40}{target:>9}" + "".join(f"{fmt.format(v):>12}" for v in vals) + f"   {verdict}")
    cpu = "".join(f"{results[p][2]:>12.1f}" for p in POLICIES)
    lines.append(f"{'simulation CPU time (s, one core)':<40}{'':>9}" + cpu)
    return lines


def plots(named: dict[str, dict[str, tuple[SimResult, dict[str, Any], float]]]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    DOCS.mkdir(exist_ok=True)
    colors = {"fifo": "#b0b0b0", "easy": "#5b8bd0", "frontdesk": "#d0703c"}
    written = []
    fig, axes = plt.subplots(1, len(named), figsize=(5.5 * len(named), 4))
    for ax, (wname, results) in zip(axes, named.items(), strict=True):
        classes = ["agent", "trial", "training", "hpc"]
        width = 0.27
        for i, p in enumerate(POLICIES):
            vals = [results[p][1]["classes"].get(c, {}).get("wait_s", {}).get("mean", 0.0) for c in classes]
            ax.bar([k + (i - 1) * width for k in range(len(classes))], vals, width, label=p, color=colors[p])
        ax.set_xticks(range(len(classes)), classes)
        ax.set_ylabel("mean wait (s)")
        ax.set_title(wname)
        ax.axhline(30, color="k", lw=0.6, ls=":")
    axes[0].legend()
    fig.tight_layout()
    written.append(DOCS / "policy_waits.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    day = named["agent-heavy day, 1.4x training+hpc"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for p in POLICIES:
        res = day[p][0]
        waits = [r.start - r.submit for r in res.records if r.job_class == "agent" and r.start is not None]
        xs = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600]
        ax1.plot(
            xs,
            [max(sum(w > x for w in waits) / len(waits), 1e-5) for x in xs],
            marker="o",
            ms=3,
            label=p,
            color=colors[p],
        )
        hours, util = _hourly(res)
        ax2.step(hours, util, where="post", label=p, color=colors[p])
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("wait x (s)")
    ax1.set_ylabel("fraction of agent jobs waiting > x (1e-5: none)")
    ax1.set_title("agent waits, agent-heavy day (1.4x big jobs)")
    ax1.legend()
    ax2.set_xlabel("hour of the day")
    ax2.set_ylabel("GPU utilisation")
    ax2.set_ylim(0, 1)
    ax2.axhline(0.6, color="k", lw=0.6, ls=":")
    ax2.set_title("GPU utilisation per hour")
    fig.tight_layout()
    written.append(DOCS / "policy_day.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)
    return written


def _hourly(res: SimResult) -> tuple[list[float], list[float]]:
    t0, t1 = res.window
    edges = [t0 + 3600 * h for h in range(int((t1 - t0) // 3600) + 1)]
    util = []
    samples = [(t, g) for t, g, _ in res.trace]
    k, busy = 0, 0.0
    while k < len(samples) and samples[k][0] <= t0:
        busy = samples[k][1]
        k += 1
    for a, b in zip(edges, edges[1:], strict=False):
        area, last = 0.0, a
        while k < len(samples) and samples[k][0] < b:
            area += busy * (samples[k][0] - last)
            last, busy = samples[k][0], samples[k][1]
            k += 1
        area += busy * (b - last)
        util.append(area / (res.gpu_capacity * (b - a)))
    return [(e - t0) / 3600 for e in edges[:-1]], util


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plots", action="store_true")
    args = ap.parse_args()
    named = {
        "validation mix": run(validation_mix(args.seed)),
        "agent-heavy day": run(agent_day(AgentMix(), args.seed)),
        "agent-heavy day, 1.4x training+hpc": run(agent_day(HEAVY, args.seed)),
    }
    for wname, results in named.items():
        jobs = len(results["fifo"][0].records)
        print(f"\n== {wname} ({jobs} jobs measured) ==")
        print("\n".join(criteria(results)))
    if args.plots:
        for path in plots(named):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
