"""Workloads for the simulator: the Standard Workload Format (SWF), the agent-heavy generator with the
published defaults, and the issue's validation mix. Pure: text in, jobs out; randomness from a seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from statistics import NormalDist

from frontdesk.sim.swf import Cleaning, Machine, SwfReport, clean_swf, machine_of, parse_rows, read_header
from frontdesk.spec.accelerators import GpuNeed

__all__ = ["AgentMix", "SimJob", "Workload", "agent_day", "parse_swf", "validation_mix"]

GiB = 1024**3


@dataclass
class SimJob:
    """One submission as the simulator replays it."""

    id: str
    submit: float
    runtime: float
    walltime: float
    cpus: int
    principal: str
    memory_bytes: int = 0
    gpus: int = 0
    group: str = ""
    declared: str | None = None
    trial: bool = False
    template: str = ""
    nodes: int = 0
    gpu: GpuNeed = field(default_factory=GpuNeed)
    cancelled: bool = False
    agent: bool = False


@dataclass
class Workload:
    """Jobs plus the window over which to measure (jobs before `start` only warm the cluster up)."""

    name: str
    jobs: list[SimJob]
    start: float = 0.0
    end: float | None = None
    cluster: str = "cluster100"
    machine: Machine | None = None
    """For SWF traces: the processor-pool machine to replay on."""
    swf: SwfReport | None = None
    """For SWF traces: what the reader kept, dropped and refused."""


@dataclass(frozen=True)
class AgentMix:
    """The agent-heavy mix; defaults follow the published measurement (agents vs humans)."""

    users: int = 50
    agent_user_share: float = 0.20
    agent_submission_share: float = 0.56
    agent_short_share: float = 0.327
    human_short_share: float = 0.093
    agent_median_runtime: float = 193.0
    human_median_runtime: float = 278.0
    agent_cancel_rate: float = 0.103
    human_cancel_rate: float = 0.023
    agent_resubmit_median: float = 16 * 60.0
    human_resubmit_median: float = 30 * 60.0
    small_jobs_per_day: int = 9000
    training_jobs_per_day: int = 150
    hpc_jobs_per_day: int = 200
    trial_share: float = 0.6
    gamers: int = 1
    """Agent principals that game the trial privilege (trials run to the cap and are chained)."""
    hours: float = 24.0
    warmup_hours: float = 6.0
    groups: int = 8


def _sigma(median: float, short_share: float) -> float:
    """Lognormal sigma such that P(runtime < 60 s) = short_share for the given median."""
    return (math.log(60.0) - math.log(median)) / NormalDist().inv_cdf(short_share)


def _round_up(seconds: float, step: float) -> float:
    return max(step, math.ceil(seconds / step) * step)


class _Gen:
    def __init__(self, mix: AgentMix, seed: int) -> None:
        self.mix, self.rng, self.n = mix, random.Random(seed), 0
        n_agents = max(1, round(mix.users * mix.agent_user_share))
        self.agents = [f"agent{i:02d}" for i in range(n_agents)]
        self.humans = [f"user{i:02d}" for i in range(mix.users - n_agents)]
        self.group = {p: f"lab{i % mix.groups}" for i, p in enumerate(self.agents + self.humans)}
        self.jobs: list[SimJob] = []

    def _id(self) -> str:
        self.n += 1
        return f"j{self.n}"

    def _daytime(self, t0: float, t1: float) -> float:
        while True:  # thinning: weight 3 between 08:00 and 20:00
            t = self.rng.uniform(t0, t1)
            if 8 <= (t / 3600) % 24 < 20 or self.rng.random() < 1 / 3:
                return t

    def small(self, agent: bool, t: float, principal: str) -> None:
        m, rng = self.mix, self.rng
        med = m.agent_median_runtime if agent else m.human_median_runtime
        sig = _sigma(med, m.agent_short_share if agent else m.human_short_share)
        runtime = min(rng.lognormvariate(math.log(med), sig), 4 * 3600.0)
        runtime = max(runtime, 2.0)
        cpus = rng.choice([1, 1, 2, 2, 4, 4, 8] if agent else [1, 2, 4, 8, 16])
        gpus = 1 if rng.random() < (0.25 if agent else 0.15) else 0
        walltime = min(_round_up(runtime * rng.uniform(1.3, 3.0), 300), 4 * 3600.0)
        runtime = min(runtime, walltime)
        tmpl = f"{principal}:task{rng.randrange(40)}"
        trial = agent and walltime <= 600 and cpus <= 4 and rng.random() < m.trial_share
        cancel_rate = m.agent_cancel_rate if agent else m.human_cancel_rate
        cancelled = rng.random() < cancel_rate
        if cancelled:
            runtime = max(1.0, runtime * rng.uniform(0.05, 0.9))
        self.jobs.append(
            SimJob(
                self._id(),
                t,
                runtime,
                walltime,
                cpus,
                principal,
                cpus * 2 * GiB,
                gpus,
                self.group[principal],
                trial=trial,
                template=tmpl,
                cancelled=cancelled,
                agent=agent,
            )
        )
        if cancelled:  # the resubmission after a cancel
            med_r = m.agent_resubmit_median if agent else m.human_resubmit_median
            again = t + runtime + rng.lognormvariate(math.log(med_r), 0.8)
            if again < m.hours * 3600:
                self.small(agent, again, principal)

    def gamer(self, principal: str, t0: float, t1: float) -> None:
        """Trials that run to the cap and are resubmitted from a checkpoint straight away."""
        cap = 600.0
        t = self.rng.uniform(t0, t1 - 6 * 3600)
        for _ in range(30):
            self.jobs.append(
                SimJob(
                    self._id(),
                    t,
                    cap,
                    cap,
                    4,
                    principal,
                    8 * GiB,
                    1,
                    self.group[principal],
                    trial=True,
                    template=f"{principal}:train-chunk",
                    agent=True,
                )
            )
            t += cap + 20.0

    def training(self, t: float) -> None:
        rng = self.rng
        nodes = rng.choice([1, 1, 2, 2, 4])
        runtime = min(rng.lognormvariate(math.log(3 * 3600), 0.6), 12 * 3600.0)
        walltime = min(_round_up(runtime * rng.uniform(1.2, 2.0), 1800), 24 * 3600.0)
        need = GpuNeed(min_memory=80 * 1000**3) if rng.random() < 0.5 else GpuNeed()
        principal = rng.choice(self.humans)
        self.jobs.append(
            SimJob(
                self._id(),
                t,
                runtime,
                walltime,
                64 * nodes,
                principal,
                nodes * 512 * GiB,
                8 * nodes,
                self.group[principal],
                nodes=nodes,
                gpu=need,
                template=f"{principal}:train",
            )
        )

    def hpc(self, t: float) -> None:
        rng = self.rng
        cpus = rng.choice([32, 64, 128, 256, 512])
        runtime = min(rng.lognormvariate(math.log(1.5 * 3600), 0.7), 24 * 3600.0)
        walltime = min(_round_up(runtime * rng.uniform(1.2, 2.5), 1800), 48 * 3600.0)
        principal = rng.choice(self.humans)
        self.jobs.append(
            SimJob(
                self._id(),
                t,
                runtime,
                walltime,
                cpus,
                principal,
                cpus * 2 * GiB,
                0,
                self.group[principal],
                template=f"{principal}:sim",
            )
        )


def agent_day(mix: AgentMix | None = None, seed: int = 1) -> Workload:
    """A generated agent-heavy day on the 100-node cluster (plus a warm-up before t=0)."""
    m = mix or AgentMix()
    g = _Gen(m, seed)
    t0, t1 = -m.warmup_hours * 3600, m.hours * 3600
    scale = (t1 - t0) / 86400
    n_small = round(m.small_jobs_per_day * scale)
    n_agent = round(n_small * m.agent_submission_share)
    while n_agent > 0:  # agent sessions: bursts of explore-modify-execute submissions
        principal = g.rng.choice(g.agents[m.gamers :] or g.agents)
        t = g.rng.uniform(t0, t1)
        for _ in range(min(n_agent, 1 + int(g.rng.expovariate(1 / 7)))):
            g.small(True, t, principal)
            t += g.rng.expovariate(1 / 45)
            n_agent -= 1
    for _ in range(n_small - round(n_small * m.agent_submission_share)):
        g.small(False, g._daytime(t0, t1), g.rng.choice(g.humans))
    for principal in g.agents[: m.gamers]:
        g.gamer(principal, max(t0, 0.0), t1)
    for _ in range(round(m.training_jobs_per_day * scale)):
        g.training(g.rng.uniform(t0, t1))
    for _ in range(round(m.hpc_jobs_per_day * scale)):
        g.hpc(g._daytime(t0, t1))
    jobs = sorted((j for j in g.jobs if j.submit < t1), key=lambda j: j.submit)
    return Workload(f"agent-day(seed={seed})", jobs, 0.0, t1, "cluster100")


def validation_mix(seed: int = 1) -> Workload:
    """The issue's mix: 50 agent jobs of ~5 min, 2 training jobs of 4 nodes x 8 GPUs, a 256-core hpc job."""
    rng = random.Random(seed)
    jobs: list[SimJob] = []
    for i in range(50):
        principal = f"agent{i % 5}"
        cpus = rng.choice([1, 2, 4])
        jobs.append(
            SimJob(
                f"a{i}",
                i * 6.0,
                rng.uniform(240, 360),
                600,
                cpus,
                principal,
                cpus * 2 * GiB,
                1 if i % 4 == 0 else 0,
                "lab-agents",
                trial=(i % 2 == 0),
                template=f"{principal}:t{i}",
                agent=True,
            )
        )
    for k in range(2):
        jobs.append(
            SimJob(
                f"t{k}",
                20.0 + k,
                2 * 3600,
                3 * 3600,
                256,
                f"trainer{k}",
                4 * 512 * GiB,
                32,
                "lab-ml",
                nodes=4,
                gpu=GpuNeed(min_memory=80 * 1000**3),
                template="train",
            )
        )
    jobs.append(SimJob("h0", 25.0, 3600, 2 * 3600, 256, "physicist", 512 * GiB, 0, "lab-phys", template="sim"))
    return Workload("validation", sorted(jobs, key=lambda j: j.submit), 0.0, None, "validation")


def parse_swf(
    text: str, name: str = "swf", machine: Machine | None = None, cleaning: Cleaning | None = None
) -> Workload:
    """Jobs from Standard Workload Format text, on the trace's own machine unless `machine` is given.

    Cleaning per `cleaning` (see sim.swf); what was dropped or refused is in `Workload.swf`. Memory is not
    modelled for SWF jobs (the machine is a processor pool, as in the literature).
    """
    rows = parse_rows(text)
    mach = machine or machine_of(read_header(text), max((r.procs for r in rows), default=1))
    kept, report = clean_swf(rows, mach, cleaning or Cleaning())
    jobs = [
        SimJob(
            f"s{r.number}",
            r.submit,
            r.runtime,
            r.requested,
            r.procs,
            f"u{r.user}" if r.user >= 0 else "unknown",
            0,
            0,
            f"g{r.group}" if r.group >= 0 else "",
            cancelled=r.status == 5,
            template=f"u{r.user}:{r.executable}",
        )
        for r in kept
    ]
    jobs.sort(key=lambda j: j.submit)
    return Workload(name, jobs, 0.0, None, "swf", mach, report)
