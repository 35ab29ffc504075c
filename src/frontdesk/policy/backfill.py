"""One backfill engine for every ordering: FIFO (stop at the first blocked job), EASY (one reservation,
backfill around it) and frontdesk's (one reservation per pool, jobs in MLFQ order).

A reservation holds the nodes the blocked head job will use at its shadow time (when enough running
jobs will have ended, by their requested walltimes); a later job may start now if it ends before the
shadow time or keeps off those nodes, so backfill never delays the head. Where any whole free core serves
the head (a cores-only job on nodes all alike: `shadow.counted_pools`) the reservation is a processor count,
as in textbook EASY: a job ending after the shadow time may start anywhere while it takes no more than the
"extra" cores left over then.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from frontdesk.policy.model import JobView, NodeView, Placement, RunningView
from frontdesk.policy.shadow import Reservation, Runs, _CopyOnWrite, _shadow
from frontdesk.policy.shapes import IndexedNodes

__all__ = ["AgentRules", "Placer", "Reservation", "backfill"]


class Placer(Protocol):
    """Where a job may go and how it is placed there."""

    def candidates(self, job: JobView) -> Sequence[str]:
        """Names of nodes the job could ever use."""

    def signature(self, job: JobView) -> Hashable:
        """Jobs with equal signatures fit or fail alike on the same nodes."""

    def place(self, job: JobView, nodes: Mapping[str, NodeView], exclude: frozenset[str]) -> Placement | None:
        """A placement on `nodes` avoiding `exclude`, or None. A placement that uses no excluded node is the
        one found without `exclude` (the pass relies on it: placing a job off the reservation at once)."""

    def cores_rule(self, job: JobView) -> tuple[Sequence[str], float] | None:
        """(pools, core ratio) when `place` is `shapes.place_cores(job, nodes, pools, exclude, "spread",
        ratio)` on indexed nodes (a cores-only job, spread, no node count, no borrowing), else None."""


@dataclass(frozen=True)
class AgentRules:
    """How agent work shares a pool with batch jobs (hpc, training): per reserve key, `slices` cores kept for
    agent work, and `fill`, the share of a reservation's cores agent work may hold when it ends before the
    shadow time."""

    is_agent: Callable[[JobView], bool]
    slices: Mapping[str, float]
    fill: Mapping[str, float]
    caps: Mapping[str, float] = field(default_factory=dict)
    """Per reserve key: the most cores agent work may hold at once (a lane bounded in size)."""


def backfill(
    order: Sequence[JobView],
    nodes: Mapping[str, NodeView],
    running: Sequence[RunningView],
    now: float,
    placer: Placer,
    reserve_key: Callable[[JobView], str] | None,
    depth: int = 200,
    may_reserve: Callable[[JobView], bool] | None = None,
    heads: Sequence[Iterable[JobView]] = (),
    agents: AgentRules | None = None,
    in_place: bool = False,
) -> tuple[list[Placement], dict[str, Reservation]]:
    """Placements to start now, in `order`; `reserve_key=None` is strict FIFO. A blocked job for which
    `may_reserve` is false gets no reservation (it only backfills; the next blocked job may reserve).
    `in_place`: the placements are applied to `nodes` (a dict the caller owns) as they are made, not to a
    planning copy (the simulator then starts them without applying them again).

    `heads` are queues in first-come order (EASY's): each is walked first, its jobs started while they fit,
    and its first blocked job takes its key's reservation, whatever `may_reserve` says; so after the head
    starts, the next oldest job holds the reservation, as in textbook EASY. Then `order` backfills, under
    `agents`' slice and fill rules."""
    p = _Pass(nodes, running, now, placer, reserve_key, agents, in_place)
    done: set[str] = set()
    for queue in heads:
        for job in queue:
            done.add(job.id)
            if not p.start(job):
                if p.lane_full(job):  # agent work held back by its lane, not by capacity: no reservation
                    continue
                p.reserve(job)
                break
    for job in order[:depth]:
        if job.id in done or p.start(job):
            continue
        if reserve_key is None:
            break
        if p.reservations.get(reserve_key(job)) is None and (may_reserve is None or may_reserve(job)):
            p.reserve(job)
    return p.out, p.reservations


class _Pass:
    """One backfill pass: the planning view, the placements made, the reservations held."""

    def __init__(
        self,
        nodes: Mapping[str, NodeView],
        running: Sequence[RunningView],
        now: float,
        placer: Placer,
        reserve_key: Callable[[JobView], str] | None,
        agents: AgentRules | None,
        in_place: bool = False,
    ) -> None:
        self.work = _CopyOnWrite(nodes, in_place)
        self.running, self.now, self.placer, self.key, self.agents = running, now, placer, reserve_key, agents
        self.runs = Runs(running)
        """The running jobs and those planned in this pass."""
        self.reservations: dict[str, Reservation] = {}
        self.out: list[Placement] = []
        self.failed: set[Hashable] = set()
        self.excluded_failed: set[tuple[str, Hashable]] = set()
        self.held: dict[str, list[float]] = {}
        """key -> agent cores on its reservation's nodes [until the shadow time, past it], the head's cores,
        the slice cores the head leaves free"""
        self.head: dict[str, tuple[float, float]] = {}
        self.extra: dict[str, list[float]] = {}
        """key -> [extra cores left, slice cores left for agent work] of a processor-count reservation"""
        self.counted: dict[str, frozenset[str]] = {}
        """key -> the pools whose cores a processor-count reservation counts"""
        self.slice = _Slices(self.work.nodes, running, agents.slices if agents else {}, agents.caps if agents else {})

    def _agent(self, job: JobView) -> bool:
        return self.agents is not None and self.agents.is_agent(job)

    def lane_full(self, job: JobView) -> bool:
        """Agent work that its key's lane has no room for."""
        return self._agent(job) and not self.slice.agent_fits(self.key(job) if self.key else "", job.cpus)

    def start(self, job: JobView) -> bool:
        """Start `job` now if it fits without delaying its key's reservation."""
        if job.job_class != "agent" and not self.work.may_fit(job):
            # more than is free in all: no job of its shape fits for the rest of the pass (planning only takes
            # capacity), checked before its signature is built (most of a long queue stops here)
            return False
        sig = self.placer.signature(job)
        if sig in self.failed:  # planning only takes capacity: what failed once in this pass fails again
            return False
        key = self.key(job) if self.key else ""
        res = self.reservations.get(key)
        agent = self._agent(job)
        if not (self.slice.agent_fits(key, job.cpus) if agent else self.slice.batch_fits(key, job.cpus)):
            return False
        p = self._placement(job, key, res, agent, sig)
        if p is None:
            return False
        if res is not None and res.extra is not None and self.now + job.walltime_s > res.shadow:
            self._take_extra(key, self._cost(key, p), agent)
        if res is not None and agent and key in self.held:
            held = self.held[key]
            held[0 if self.now + job.walltime_s <= res.shadow else 1] += sum(
                x.cpus for x in p.parts if x.node in res.nodes
            )
        self.work.apply(p.parts, p.exclusive, 1)
        self.slice.took(key, sum(x.cpus for x in p.parts), agent)
        self.out.append(p)
        view = RunningView(job.id, p.parts, self.now + job.walltime_s, p.exclusive, job.job_class, job.trial)
        self.runs.add(view)
        return True

    def _placement(
        self, job: JobView, key: str, res: Reservation | None, agent: bool, sig: Hashable
    ) -> Placement | None:
        """Where `job` (of signature `sig`) may start now without delaying `res`, or None."""
        # Planning only ever takes capacity, so what failed once in this pass fails again; and a job asking
        # more than the whole cluster has free cannot be placed anywhere (checked before any node is scanned).
        ok = sig not in self.failed and self.work.may_fit(job)
        if ok and res is not None and res.extra is not None and self.now + job.walltime_s > res.shadow:
            return self._counted(job, key, sig, agent)
        if ok and res is not None and not agent and self.now + job.walltime_s > res.shadow:
            # A batch job ending after the shadow time may use no reserved node: placed off them at once (a
            # placement that touches none of them is the same either way, so nothing is decided otherwise).
            if (key, sig) in self.excluded_failed:
                return None
            p = self.placer.place(job, self.work.nodes, res.nodes)
            if p is None:
                self.excluded_failed.add((key, sig))
            return p
        p = self.placer.place(job, self.work.nodes, frozenset()) if ok else None
        if p is None:
            self.failed.add(sig)
        elif (
            res is not None and agent and any(x.node in res.nodes for x in p.parts) and not self._may_fill(job, res, p)
        ):  # (a batch job gets here only when it ends before the shadow time: it may use the reserved nodes)
            p = None if (key, sig) in self.excluded_failed else self.placer.place(job, self.work.nodes, res.nodes)
            if p is None:
                self.excluded_failed.add((key, sig))
        return p

    def _counted(self, job: JobView, key: str, sig: Hashable, agent: bool) -> Placement | None:
        """Where `job`, ending after its key's processor-count reservation's shadow time, may start: anywhere,
        when it takes no more than the extra cores left (agent work: and the slice the head leaves free)."""
        if (key, (sig, agent)) in self.excluded_failed:
            return None
        left, spare = self.extra[key]
        room = left + (spare if agent else 0.0) + 1e-9
        rule = self.placer.cores_rule(job)
        if rule is not None and rule[1] == 1.0 and job.cpus > room and self.counted[key].issuperset(rule[0]):
            # any placement of it (whole cores on the counted pools) would cost exactly job.cpus: no need to place
            self.excluded_failed.add((key, (sig, agent)))
            return None
        p = self.placer.place(job, self.work.nodes, frozenset())
        if p is None:
            self.failed.add(sig)
            return None
        if self._cost(key, p) > room:
            self.excluded_failed.add((key, (sig, agent)))  # the same shape costs the same: fails again
            return None
        return p

    def _cost(self, key: str, p: Placement) -> float:
        """The whole cores `p` takes from the counted pools at the shadow time (at most: a whole node when
        exclusive, a core for a share of one)."""
        pools, nodes = self.counted[key], self.work.nodes
        return float(
            sum(
                nodes[x.node].cpus if p.exclusive else math.ceil(x.cpus - 1e-9)
                for x in p.parts
                if nodes[x.node].pool in pools
            )
        )

    def _take_extra(self, key: str, cost: float, agent: bool) -> None:
        got = self.extra[key]
        if agent:  # agent work takes the slice the head leaves free first
            use = min(got[1], cost)
            got[1] -= use
            cost -= use
        got[0] -= cost

    def _may_fill(self, job: JobView, res: Reservation, p: Placement) -> bool:
        """Whether `job` may run on `res`'s nodes. A batch job: when it ends before the shadow time. Agent
        work: when it ends before the shadow time and agent work then holds no more than its `fill` share of
        the head's cores until then; or, ending later, when agent work then holds no more of the reserved
        cores past the shadow time than the slice the head leaves free."""
        ends = self.now + job.walltime_s
        before = ends <= res.shadow
        if self.agents is None or not self.agents.is_agent(job):
            return before
        key = self.key(job) if self.key else ""
        extra = sum(x.cpus for x in p.parts if x.node in res.nodes)
        held = self.held.get(key) or self._held(key, res)
        if before:
            return held[0] + extra <= self.agents.fill.get(key, 1.0) * held[2] + 1e-9
        return held[1] + extra <= held[3] + 1e-9

    def reserve(self, job: JobView) -> None:
        """Give blocked `job` its key's reservation (at its shadow time, on the nodes it will use); a batch
        head in a pool with an agent slice reserves the slice's cores too."""
        key = self.key(job) if self.key else ""
        spare = 0 if self._agent(job) else self.slice.spare(key, job.cpus)
        need = replace(job, cpus=job.cpus + spare) if spare else job
        res = _shadow(need, self.work.nodes, self.runs, self.placer, self.now)
        self.reservations[key] = Reservation(job.id, res.shadow, res.where, res.extra)
        rule = self.placer.cores_rule(need) if res.extra is not None else None
        if rule is not None:  # a processor count (`shadow.counted_pools`): over the pools of `rule`
            self.counted[key] = frozenset(rule[0])
            self.extra[key] = [float(res.extra or 0.0), float(spare)]
        self.head[key] = (float(job.cpus), float(spare))
        self.held.pop(key, None)

    def _held(self, key: str, res: Reservation) -> list[float]:
        """Counted when agent work first asks for reserved nodes (planned trials are in the index too)."""
        index = self.runs.by_node()
        trials = {r.id: r for n in res.nodes for r in index.get(n, ()) if r.trial}
        held = [0.0, 0.0, *self.head[key]]
        for r in trials.values():
            held[0 if r.expected_end <= res.shadow else 1] += sum(x.cpus for x in r.parts if x.node in res.nodes)
        self.held[key] = held
        return held


class _Slices:
    """Per reserve key (pool), the cores kept for agent work: a batch job starts only if the pool keeps
    `size - (cores agent work holds)` cores free after it (never more than the job leaves of the pool)."""

    def __init__(
        self,
        nodes: Mapping[str, NodeView],
        running: Sequence[RunningView],
        sizes: Mapping[str, float],
        caps: Mapping[str, float],
    ) -> None:
        self.nodes, self.running, self.caps = nodes, running, caps
        self.sizes = {k: v for k, v in sizes.items() if v > 0 or k in caps}
        self.tally: dict[str, list[float]] = {}
        """key -> [total cores, free cores, cores held by agent work], counted before anything is planned"""
        for key in self.sizes:
            self._of(key)

    def _of(self, key: str) -> list[float] | None:
        if key not in self.sizes:
            return None
        t = self.tally.get(key)
        if t is None:
            members, total = self._static(key)
            free = sum(
                max(0.0, n.cpus - n.used_cpus)
                for n in self.nodes.values()
                if n.pool == key and not n.drained and not n.exclusive
            )
            agent = sum(x.cpus for r in self.running if r.trial for x in r.parts if x.node in members)
            t = self.tally[key] = [float(total), free, agent]
        return t

    def _static(self, key: str) -> tuple[frozenset[str], int]:
        """The pool's node names and its cores not drained (kept on the simulator's nodes: neither changes)."""
        memo = self.nodes.layout.memo if isinstance(self.nodes, IndexedNodes) else None
        got: tuple[frozenset[str], int] | None = memo.get(("slice", key)) if memo is not None else None
        if got is None:
            members = frozenset(n.name for n in self.nodes.values() if n.pool == key)
            got = (members, sum(n.cpus for n in self.nodes.values() if n.pool == key and not n.drained))
            if memo is not None:
                memo[("slice", key)] = got
        return got

    def spare(self, key: str, cpus: int) -> int:
        """The slice a batch job of `cpus` must leave to agent work in `key`'s pool (free or agent-held)."""
        t = self._of(key)
        if t is None:
            return 0
        return max(0, math.ceil(min(self.sizes[key], t[0] - cpus) - 1e-9))

    def batch_fits(self, key: str, cpus: int) -> bool:
        """Whether a batch job of `cpus` leaves the slice free (less what agent work holds)."""
        t = self._of(key)
        return t is None or t[1] - cpus >= self.spare(key, cpus) - t[2] - 1e-9

    def agent_fits(self, key: str, cpus: int) -> bool:
        """Whether agent work of `cpus` stays within `key`'s lane cap (a job wider than the lane runs alone)."""
        t = self._of(key)
        return t is None or key not in self.caps or t[2] <= 0 or t[2] + cpus <= self.caps[key] + 1e-9

    def took(self, key: str, cpus: float, agent: bool) -> None:
        t = self._of(key)
        if t is not None:
            t[1] -= cpus
            if agent:
                t[2] += cpus
