"""Run several policies over one workload and render the side-by-side table (`frontdesk simulate`)."""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from frontdesk.policy.config import PolicyConfig, parse_policy
from frontdesk.policy.suspend import TURNAROUND, SuspendRules
from frontdesk.sim.cluster import agent_nodes, assign_pools, build_cluster, default_policy
from frontdesk.sim.engine import SimResult, simulate
from frontdesk.sim.metrics import summarize
from frontdesk.sim.policies import BaselinePolicy, FrontdeskPolicy, SimPolicy
from frontdesk.sim.slurm import SlurmModel, replay_slurm
from frontdesk.sim.swf import MAX_NODES, MAX_SWF_BYTES, Cleaning, Machine
from frontdesk.sim.textbook import Rule, replay
from frontdesk.sim.workload import AgentMix, Workload, agent_day, parse_swf, validation_mix

__all__ = [
    "DEFAULT_POLICIES",
    "AgentNodes",
    "SLURM",
    "TEXTBOOK",
    "compare",
    "default_policies",
    "load_workload",
    "make_policy",
    "render",
    "run",
]

DEFAULT_POLICIES = ("fifo", "easy", "frontdesk")
TEXTBOOK = tuple(r.value for r in Rule)
MAX_HOURS = 24.0 * 366
"""The longest generated agent-day (`--hours`)."""
MAX_POLICY_BYTES = 1 << 20
"""The largest frontdesk.toml `--policy` reads."""
SLURM = {"slurm": SlurmModel(), "slurm-frontdesk": SlurmModel(steer=True)}
"""Slurm's own scheduler and backfill (sim.slurm), without and with frontdesk's nice steering."""


def load_workload(
    name: str,
    seed: int = 1,
    hours: float = 24.0,
    machine: Machine | None = None,
    cleaning: Cleaning | None = None,
) -> Workload:
    """`validation`, `agent-day`, or an SWF file (optionally .gz) on its own machine unless `machine` is given."""
    if name == "validation":
        return validation_mix(seed)
    if name in ("agent-day", "agent-heavy"):
        if not 0 < hours <= MAX_HOURS:  # NaN compares false
            raise ValueError(f"--hours {hours}: must be above 0 and at most {MAX_HOURS:g}")
        return agent_day(AgentMix(hours=hours), seed)
    path = Path(name)
    if not path.is_file():
        raise ValueError(f"unknown workload {name!r}: use validation, agent-day or an SWF file")
    try:
        text = _read_bounded(path, MAX_SWF_BYTES, gunzip=True).decode()
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
        raise ValueError(f"{name}: not a readable SWF file ({exc})") from None
    return parse_swf(text, path.name, machine, cleaning)


def _read_bounded(path: Path, limit: int, gunzip: bool = False) -> bytes:
    """A regular file's bytes (inflated if gzip and `gunzip`), refused past `limit` before it is all read."""
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise ValueError(f"{path}: not a regular file")
    with path.open("rb") as fh:
        raw = fh.read(limit + 1)
    if gunzip and raw[:2] == b"\x1f\x8b":
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as inflating:
            raw = inflating.read(limit + 1)
    if len(raw) > limit:
        raise ValueError(f"{path}: more than {limit >> 20} MiB{' inflated' if gunzip else ''}")
    return raw


def _cluster(wl: Workload) -> tuple[str, Machine | None]:
    return wl.cluster, wl.machine


@dataclass(frozen=True)
class AgentNodes:
    """`--agent-nodes`: `count` nodes of `cores` outside an SWF trace's machine, where frontdesk routes agent
    work (its `agent` partition); the trace's own jobs keep the machine, as they would on Slurm."""

    count: int
    cores: int = 32

    def __post_init__(self) -> None:
        if self.count < 1 or self.cores < 1:
            raise ValueError(f"--agent-nodes {self.count} of {self.cores} cores: both must be at least 1")
        if self.count > MAX_NODES:
            raise ValueError(f"--agent-nodes {self.count}: more than {MAX_NODES:,} nodes")


def make_policy(spec: str, wl: Workload, agents: AgentNodes | None = None) -> SimPolicy:
    """`fifo`, `easy`, `frontdesk`, or a frontdesk.toml whose `[policy]` table is frontdesk's policy; with
    `agents`, frontdesk's built-in policy routes agent work to the agent nodes."""
    cluster, machine = _cluster(wl)
    if agents is not None:
        if machine is None or spec != "frontdesk":
            raise ValueError(f"--agent-nodes models frontdesk's routing on an SWF trace: not {spec} on {wl.name}")
        routed = default_policy(cluster, machine, agent_pool=True)
        name = f"frontdesk+{agents.count}x{agents.cores}"
        return FrontdeskPolicy(routed, name=name, direct=routed.pool_for("hpc").name)
    base = default_policy(cluster, machine, _slice(spec))
    if spec == "fifo":
        return BaselinePolicy("fifo", False, base.classify)
    if spec == "easy":
        return BaselinePolicy("easy", True, base.classify)
    if spec == "frontdesk":
        return FrontdeskPolicy(base)
    if spec.startswith("frontdesk-slice"):
        return FrontdeskPolicy(base, name=spec)
    if spec == "frontdesk-suspend":
        return FrontdeskPolicy(base, name=spec, suspend=TURNAROUND)
    if spec == "frontdesk-suspend-share":  # the first rules: 10 % of the requested time, 600 s of rest, no fill
        return FrontdeskPolicy(base, name=spec, suspend=SuspendRules())
    import tomllib

    path = Path(spec)
    try:
        data = tomllib.loads(_read_bounded(path, MAX_POLICY_BYTES).decode())
    except OSError as exc:
        raise ValueError(f"{spec}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{spec}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{spec}: invalid TOML: {exc}") from None
    cfg: PolicyConfig = parse_policy(data.get("policy", data), str(path))
    return FrontdeskPolicy(cfg, name=path.stem)


def _slice(spec: str) -> int:
    """`frontdesk-sliceN`: frontdesk's policy with N cores kept for agent work."""
    if not spec.startswith("frontdesk-slice"):
        return 0
    n = spec.removeprefix("frontdesk-slice")
    if not n.isdigit() or int(n) < 1:
        raise ValueError(f"{spec}: write frontdesk-sliceN with N the cores kept for agent work (N >= 1)")
    return int(n)


def run(wl: Workload, spec: str, agents: AgentNodes | None = None) -> SimResult:
    """One policy over `wl`: the textbook rules on the processor pool, the others on the cluster's nodes
    (plus `agents`' nodes, frontdesk only)."""
    cluster, machine = _cluster(wl)
    if agents is not None:
        pol = make_policy(spec, wl, agents)
        assert isinstance(pol, FrontdeskPolicy)
        nodes = build_cluster(cluster, machine) + agent_nodes(agents.count, agents.cores)
        return simulate(wl, assign_pools(nodes, pol.cfg), pol)
    if spec in TEXTBOOK:
        if machine is None:
            raise ValueError(f"{spec} replays SWF traces (a processor-pool machine), not {wl.name}")
        return replay(wl, machine.procs, Rule(spec), default_policy(cluster).classify)
    if spec in SLURM:
        if machine is None:
            raise ValueError(f"{spec} replays SWF traces (a processor-pool machine), not {wl.name}")
        return replace(replay_slurm(wl, machine.procs, SLURM[spec], default_policy(cluster).classify), policy=spec)
    pol = make_policy(spec, wl)
    cfg = getattr(pol, "cfg", None) or default_policy(cluster, machine)
    return simulate(wl, assign_pools(build_cluster(cluster, machine), cfg), pol)


def default_policies(wl: Workload) -> list[str]:
    """The textbook baselines too when the workload is an SWF trace."""
    return [*TEXTBOOK, *DEFAULT_POLICIES] if wl.machine else list(DEFAULT_POLICIES)


def compare(wl: Workload, policies: list[str], agents: AgentNodes | None = None) -> list[dict[str, Any]]:
    """One summary per policy, on the same workload and cluster."""
    out = []
    for spec in policies:
        out.append(summarize(run(wl, spec, agents)))
    return out


def _fmt_s(x: float) -> str:
    return f"{x:.0f}s" if x < 600 else f"{x / 60:.0f}m"


def render(summaries: list[dict[str, Any]]) -> str:
    """The side-by-side table people read."""
    names = [s["policy"] for s in summaries]
    width = max(14, *(len(n) + 2 for n in names))
    rows: list[tuple[str, list[str]]] = []
    classes = sorted({c for s in summaries for c in s["classes"]})
    for cls in classes:
        for key in ("mean", "p50", "p95"):
            rows.append(
                (
                    f"{cls} wait {key}",
                    [_fmt_s(s["classes"].get(cls, {}).get("wait_s", {}).get(key, 0.0)) for s in summaries],
                )
            )
        rows.append(
            (
                f"{cls} bsld",
                [f"{s['classes'].get(cls, {}).get('bsld', {}).get('mean', 0.0):.2f}" for s in summaries],
            )
        )
    rows += [
        ("bounded slowdown", [f"{s['bsld_mean']:.2f}" for s in summaries]),
        ("GPU utilisation", [f"{100 * s['gpu_util']:.1f}%" for s in summaries]),
        ("CPU utilisation", [f"{100 * s['cpu_util']:.1f}%" for s in summaries]),
        ("trial turnaround", [_fmt_s(s["trial_turnaround_s"]["mean"]) for s in summaries]),
        ("training wait if free", [_fmt_s(s["training_wait_when_free_max_s"]) for s in summaries]),
        ("hpc preempted", [str(s["classes"].get("hpc", {}).get("preempted", 0)) for s in summaries]),
        ("fairness (Jain)", [f"{s['fairness_jain']:.3f}" for s in summaries]),
        ("trial revocations", [str(len(s["trial_revocations"])) for s in summaries]),
    ]
    head = f"{'workload: ' + summaries[0]['workload']:<28}" + "".join(f"{n:>{width}}" for n in names)
    lines = [head, "-" * len(head)]
    lines += [f"{label:<28}" + "".join(f"{v:>{width}}" for v in vals) for label, vals in rows]
    return "\n".join(lines)
