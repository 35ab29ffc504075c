"""`frontdesk cluster`, `frontdesk policy show|history|rollback N|reload`, `frontdesk simulate WORKLOAD`.

`simulate` runs here, without a gateway; the others ask the gateway.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from frontdesk.cli.output import emit
from frontdesk.cli.parsing import client, group

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the `cluster`, `policy` and `simulate` commands."""
    c = sub.add_parser("cluster", help="pools, nodes, the accelerator catalog and drained nodes")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_cluster)

    p, psub = group(sub, "policy", "the scheduling policy: show, history, rollback, reload", "policy_command")
    for name, helptext, func in (
        ("show", "the policy in force", cmd_show),
        ("history", "every policy version the gateway loaded", cmd_history),
        ("reload", "re-read [policy] from frontdesk.toml now", cmd_reload),
    ):
        s = psub.add_parser(name, help=helptext)
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=func)
    r = psub.add_parser("rollback", help="put policy version N back in force")
    r.add_argument("version", type=int)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_rollback)

    s = sub.add_parser("simulate", help="replay a workload through FIFO, EASY backfill and frontdesk's policy")
    s.add_argument("workload", help="validation, agent-day, or an SWF file (.swf or .swf.gz)")
    s.add_argument(
        "--policy",
        action="append",
        metavar="FILE",
        help="fifo, easy, frontdesk, or a frontdesk.toml with a [policy] table (repeatable; "
        "default: fifo easy frontdesk)",
    )
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--hours", type=float, default=24.0, help="length of a generated agent-day")
    s.add_argument("--procs", type=int, help="SWF: replay on this many processors (default: the header's MaxProcs)")
    s.add_argument("--nodes", type=int, help="SWF: split the processors over this many nodes (default: MaxNodes)")
    s.add_argument("--keep-zero-runtime", action="store_true", help="SWF: keep jobs that ran 0 s (dropped by default)")
    s.add_argument(
        "--underrequested",
        choices=["extend", "drop", "keep"],
        default="extend",
        help="SWF: a job whose requested time is below its runtime: extend the request (default), drop it, or "
        "keep it (killed at its limit)",
    )
    s.add_argument(
        "--overlay", action="store_true", help="SWF: lay agent trials over the trace at the published shares"
    )
    s.add_argument(
        "--agent-nodes",
        type=int,
        metavar="N",
        help="SWF: N nodes outside the trace's machine where frontdesk routes agent work (policy frontdesk)",
    )
    s.add_argument("--agent-node-cores", type=int, default=32, metavar="C", help="cores per agent node (32)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_simulate)


def _render_gpus(devices: list[dict[str, Any]]) -> list[str]:
    """One line per GPU: memory, memory free to shared jobs, and who holds it."""

    def gib(n: int | None) -> str:
        return f"{(n or 0) / 1024**3:.1f}".removesuffix(".0") + " GiB"

    lines = []
    for d in devices:
        who = ", ".join(
            (f"job {h['job_id']} ({h['principal'] or '?'})" if h.get("job_id") is not None else "another user's job")
            + ("" if h.get("memory_bytes") is None else f" {gib(h['memory_bytes'])}")
            for h in d.get("holders", [])
        )
        lines.append(
            f"  gpu {d['index']:<2} {d['model']:<24} {gib(d['memory_bytes']):>9}  free {gib(d['free_bytes']):>9}"
            f"  {d['mode']:<6}{'  ' + who if who else ''}"
        )
    return lines


def _render_cluster(data: dict[str, Any]) -> str:
    inv = data.get("inventory", {})
    lines = [
        f"backend {data.get('backend')}: {inv.get('cpus')} cores, "
        f"{inv.get('memory_bytes', 0) / 1024**3:.0f} GiB, {len(inv.get('gpus', []))} GPUs"
    ]
    lines.extend(_render_gpus(data.get("gpus") or []))
    pol = data.get("policy") or {}
    if pol:
        lines.append(
            f"policy version {pol.get('version')}" + (f" (refused: {pol['refused']})" if pol.get("refused") else "")
        )
        for pool in pol.get("pools", []):
            size = ", ".join(f"{k} {pool[k]}" for k in ("cpus", "gpus") if k in pool)
            lines.append(
                f"  pool {pool['name']:<10} {pool.get('allocation', ''):<10} classes "
                f"{','.join(pool.get('classes', []))}"
                + (f"  [{size}]" if size else "")
                + (
                    f"  cpu oversubscribe 1:{pool['cpu_oversubscribe']:g}"
                    if pool.get("cpu_oversubscribe", 1) > 1
                    else ""
                )
            )
        if pol.get("gpu_models"):
            lines.append("  GPUs: " + ", ".join(f"{n} x {m}" for m, n in sorted(pol["gpu_models"].items())))
        for node, why in pol.get("drained", {}).items():
            lines.append(f"  DRAINED {node}: {why.get('detail')}")
        lines.append("catalog (per GPU): model      mem  TB/s  FP64  FP32  BF16  link")
        for a in pol.get("catalog", []):
            bf16 = f"{a['bf16_tflops']:g}" if a.get("bf16_tflops") else "-"
            lines.append(
                f"  {a['name']:<10} {a['memory_gb']:>4}G {a['bandwidth_gbs'] / 1000:>5.2f} "
                f"{a['fp64_tflops']:>5g} {a['fp32_tflops']:>5g} {bf16:>5} {a['interconnect']}"
            )
    return "\n".join(lines)


def cmd_cluster(args: argparse.Namespace) -> int:
    """Show what the gateway schedules onto."""
    data = client().request("GET", "/v1/cluster")
    emit(args.json, data, lambda: _render_cluster(data))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """The policy in force."""
    import json

    data = client().request("GET", "/v1/policy")
    emit(args.json, data, lambda: f"policy version {data['version']}\n" + json.dumps(data["config"], indent=2))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Every version, with the active one marked."""
    data = client().request("GET", "/v1/policy/history")

    def text() -> str:
        out = []
        for v in data["versions"]:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v["loaded_at"]))
            out.append(f"{'*' if v['active'] else ' '} {v['version']:>3}  {when}  {v['digest']}  {v['source']}")
        return "\n".join(out) or "no policy versions yet"

    emit(args.json, data, text)
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    """Put an earlier version back in force."""
    data = client().request("POST", "/v1/policy/rollback", {"version": args.version})
    emit(args.json, data, f"policy version {data['from']} is in force again (as version {data['version']})")
    return 0


def cmd_reload(args: argparse.Namespace) -> int:
    """Re-read [policy] now; an invalid one is refused and the old one stays."""
    data = client().request("POST", "/v1/policy/reload", {})
    emit(args.json, data, f"policy version {data['version']} in force")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run the simulator locally and print the side-by-side table."""
    from frontdesk.errors import UserError
    from frontdesk.sim.compare import AgentNodes, compare, default_policies, load_workload, render
    from frontdesk.sim.overlay import overlay_agents
    from frontdesk.sim.swf import Cleaning, Machine, Underrequested

    try:
        machine = None
        if args.procs is not None or args.nodes is not None:
            procs = args.procs if args.procs is not None else args.nodes  # --procs 0 is refused, not --nodes
            machine = Machine(procs, args.nodes if args.nodes is not None else 1, "--procs/--nodes")
        cleaning = Cleaning(not args.keep_zero_runtime, Underrequested(args.underrequested))
        wl = load_workload(args.workload, args.seed, args.hours, machine, cleaning)
        if args.overlay:
            if wl.machine is None:
                raise ValueError("--overlay lays agent trials over an SWF trace, not a generated workload")
            wl = overlay_agents(wl, seed=args.seed)
        agents = AgentNodes(args.agent_nodes, args.agent_node_cores) if args.agent_nodes is not None else None
        t0 = time.perf_counter()
        default = ["frontdesk"] if agents else default_policies(wl)
        summaries = compare(wl, list(args.policy or default), agents)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    elapsed = time.perf_counter() - t0
    data: dict[str, object] = {"workload": wl.name, "jobs": len(wl.jobs), "elapsed_s": round(elapsed, 2)}
    if wl.swf:
        data["swf"] = wl.swf.to_json()
    data["policies"] = summaries
    head = "".join(line + "\n" for line in (wl.swf.lines_text() if wl.swf else []))
    emit(args.json, data, lambda: head + render(summaries) + f"\n({len(wl.jobs)} jobs, simulated in {elapsed:.1f}s)")
    return 0
