"""Free capacity indexed by node shape, kept as jobs start and end, so placing a cores-only job reads a few
shape groups instead of scanning every node.

`IndexedNodes` is a `dict[str, NodeView]` (every placer reads it as a plain mapping) that also files each
usable node (not drained, not held exclusively) under its pool and its shape `(has GPUs, free cores)`, and
keeps the free totals. Change it only through `apply()` (or `touched()` after changing a node in place). A
planning copy shares the node objects and copies the index (a few set copies, not a walk over the nodes).

`place_cores()` answers exactly what `placement.place` answers for a job asking cores only (no GPUs, no
memory) under `spread` or `pack` (tests/unit/policy/test_shapes.py checks it against that scan); it returns
`MISS` when the index cannot answer (a node in an odd state, a packed job that fits no single node), and the
caller then scans as before.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from frontdesk.policy.model import JobView, NodeView, Part, apply

__all__ = ["MISS", "IndexedNodes", "Layout", "Miss", "on_shapes", "place_cores", "sorted_of", "take_cores"]

Parts = tuple[tuple[Part, ...], bool]
Shape = tuple[int, float]
"""(1 when the node has GPUs else 0, free cores)"""
Moves = dict[tuple[str, Shape], list[str]]


class Miss(Enum):
    MISS = "the index cannot answer: scan the nodes"


MISS = Miss.MISS


@dataclass(frozen=True)
class Layout:
    """What never changes while a simulation runs: the node names, per pool, and the GPU models present."""

    names: tuple[str, ...]
    by_pool: Mapping[str, tuple[str, ...]]
    gpu_models: frozenset[str]
    widest: Mapping[str, int]
    """pool -> the most cores one of its nodes has"""
    position: Mapping[str, int] = field(default_factory=dict, compare=False)
    """name -> its index in `names` (empty when the layout was built by hand)"""
    memo: dict[Hashable, Any] = field(default_factory=dict, compare=False)
    """Answers worked out for one state (keyed by its `IndexedNodes.version`): a reservation search a pass
    repeats when nothing started or ended since the last one."""
    run_totals: dict[int, tuple[Any, float, bool]] = field(default_factory=dict, compare=False)
    """id(running job view) -> (the view, its cores, whether they are whole on a job not held exclusively):
    kept while the job runs, so a reservation count reads a job once, not each of its parts"""
    parts: dict[tuple[str, float], Part] = field(default_factory=dict, compare=False)
    """(node, cores) -> its `Part` (immutable: one object serves every placement that takes it)"""

    @staticmethod
    def of(nodes: Iterable[NodeView]) -> Layout:
        names: list[str] = []
        by_pool: dict[str, list[str]] = {}
        models = set()
        widest: dict[str, int] = {}
        for n in nodes:
            names.append(n.name)
            by_pool.setdefault(n.pool, []).append(n.name)
            widest[n.pool] = max(widest.get(n.pool, 0), n.cpus)
            if n.gpu_model:
                models.add(n.gpu_model)
        position = {name: k for k, name in enumerate(names)}
        return Layout(tuple(names), {p: tuple(v) for p, v in by_pool.items()}, frozenset(models), widest, position)


_VERSIONS = itertools.count(1)


class IndexedNodes(dict[str, NodeView]):
    """Nodes by name, with the usable ones filed by pool and shape, and the free totals (cores, GPUs, memory)."""

    layout: Layout
    _key: dict[str, tuple[str, Shape, int, int] | None]
    """name -> (pool, shape, free GPUs, free memory) while usable, else None"""
    _buckets: dict[str, dict[Shape, set[str]]]
    _odd: set[str]
    _sorted: dict[tuple[str, Shape], list[str]]
    """(pool, shape) -> its names in order, once asked for (then kept in order as nodes come and go)"""
    _owned: set[tuple[str, Shape]]
    totals: list[float]
    """Free cores, GPUs and memory of the usable nodes."""
    version: int
    """Unique to the state: a new number at every change (a planning copy keeps its original's until changed)."""

    def __init__(self, nodes: Mapping[str, NodeView], layout: Layout | None = None) -> None:
        super().__init__(nodes)
        self.layout = layout or Layout.of(nodes.values())
        self._key, self._buckets, self._odd, self._sorted, self._owned = {}, {}, set(), {}, set()
        self.totals = [0.0, 0.0, 0.0]
        for name in self:
            self.touched(name)

    def planning_copy(self) -> IndexedNodes:
        """The same node objects (copy one before changing it) with an index of its own."""
        new = IndexedNodes.__new__(IndexedNodes)
        dict.update(new, self)
        new.layout, new._key, new._odd, new.totals = self.layout, dict(self._key), set(self._odd), list(self.totals)
        new._buckets = {p: {k: set(s) for k, s in b.items()} for p, b in self._buckets.items()}
        new.version = self.version
        new._sorted, new._owned = dict(self._sorted), set()
        return new

    def snapshot(self) -> IndexedNodes:
        """A planning copy that later changes to this one do not reach (its index; the node objects are shared,
        so read only the index from it)."""
        new = self.planning_copy()
        self._owned = set()  # the ordered lists are shared now: copy one before changing it, as the copy does
        return new

    def apply(self, parts: tuple[Part, ...], exclusive: bool, sign: int = 1) -> None:
        """`model.apply` on these nodes, then the index follows."""
        apply(self, parts, exclusive, sign)
        self.renew()
        if len(parts) == 1:
            self._refile(parts[0].node)
        else:
            self._refile_all(dict.fromkeys(x.node for x in parts))

    def touched(self, name: str) -> None:
        """Re-file node `name` after it changed (or was replaced)."""
        self.renew()
        self._refile(name)

    def renew(self) -> None:
        """A new version number (for a state a planning pass changed in place, too)."""
        self.version = next(_VERSIONS)

    def _refile(self, name: str) -> None:
        """`touched`, without a new version (the properties and helpers inlined: it runs for every part of
        every start and end)."""
        key = self._key
        old = key.get(name)
        t = self.totals
        srt = self._sorted
        if old is not None:
            pool, shape, gfree, mfree = old
            was = self._buckets[pool]
            filed = was[shape]
            filed.discard(name)
            ks = (pool, shape)
            if not filed:
                del was[shape]
                srt.pop(ks, None)
            elif ks in srt:
                names = srt[ks] if ks in self._owned else self._own(ks)
                del names[bisect.bisect_left(names, name)]
            t[0] -= shape[1]
            t[1] -= gfree
            t[2] -= mfree
        elif name in self._odd:
            self._odd.discard(name)
        n = self.get(name)
        if n is None or n.drained or n.exclusive:
            key[name] = None
            return
        free, gfree, mfree = n.cpus - n.used_cpus, n.gpus - n.used_gpus, n.memory_bytes - n.used_memory
        if free < 0 or gfree < 0 or mfree < 0:
            self._odd.add(name)
            key[name] = None
            return
        shape = (1 if n.gpus else 0, free)
        pool = n.pool
        key[name] = (pool, shape, gfree, mfree)
        ks = (pool, shape)
        if ks in srt:
            bisect.insort(srt[ks] if ks in self._owned else self._own(ks), name)
        by_shape = self._buckets.get(pool)
        if by_shape is None:
            by_shape = self._buckets[pool] = {}
        bucket = by_shape.get(shape)
        if bucket is None:
            by_shape[shape] = {name}
        else:
            bucket.add(name)
        t[0] += free
        t[1] += gfree
        t[2] += mfree

    def _refile_all(self, names: Iterable[str]) -> None:
        """`_refile` of distinct `names`, filed once per shape left or joined (not per node: a wide job)."""
        key, t, odd = self._key, self.totals, self._odd
        left: Moves = {}
        came: Moves = {}
        for name in names:
            old = key.get(name)
            if old is not None:
                pool, shape, gfree, mfree = old
                left.setdefault((pool, shape), []).append(name)
                t[0] -= shape[1]
                t[1] -= gfree
                t[2] -= mfree
            elif name in odd:
                odd.discard(name)
            n = self.get(name)
            if n is None or n.drained or n.exclusive:
                key[name] = None
                continue
            free, gfree, mfree = n.cpus - n.used_cpus, n.gpus - n.used_gpus, n.memory_bytes - n.used_memory
            if free < 0 or gfree < 0 or mfree < 0:
                odd.add(name)
                key[name] = None
                continue
            shape = (1 if n.gpus else 0, free)
            key[name] = (n.pool, shape, gfree, mfree)
            came.setdefault((n.pool, shape), []).append(name)
            t[0] += free
            t[1] += gfree
            t[2] += mfree
        self._move(left, came)

    def _move(self, left: Moves, came: Moves) -> None:
        """File the nodes that left a (pool, shape) and those that came to one; the ordered lists follow."""
        buckets, srt = self._buckets, self._sorted
        for ks, gone in left.items():
            was = buckets[ks[0]]
            filed = was[ks[1]]
            filed.difference_update(gone)
            if not filed:
                del was[ks[1]]
                srt.pop(ks, None)
            elif ks in srt:
                names = srt[ks] if ks in self._owned else self._own(ks)
                drop = set(gone)
                names[:] = [n for n in names if n not in drop]
        for ks, new in came.items():
            buckets.setdefault(ks[0], {}).setdefault(ks[1], set()).update(new)
            if ks in srt:  # (never for a shape new to the pool: its names were never listed in order)
                names = srt[ks] if ks in self._owned else self._own(ks)
                names += new
                names.sort()

    def _own(self, key: tuple[str, Shape]) -> list[str]:
        """This copy's own ordered list for `key` (a planning copy shares its original's until it changes one)."""
        if key not in self._owned:
            self._sorted[key] = list(self._sorted[key])
            self._owned.add(key)
        return self._sorted[key]

    def ordered(self, pool: str, shape: Shape) -> list[str]:
        """The names of `pool`'s nodes of `shape`, in order."""
        got = self._sorted.get((pool, shape))
        if got is None:
            got = self._sorted[(pool, shape)] = sorted(self._buckets[pool][shape])
            self._owned.add((pool, shape))
        return got

    def filed(self, name: str) -> tuple[str, float] | None:
        """(pool, free cores) of a usable node, else None."""
        k = self._key.get(name)
        return None if k is None else (k[0], k[1][1])

    @property
    def odd(self) -> bool:
        """Some node is over-allocated: the index answers nothing."""
        return bool(self._odd)

    def pools(self) -> list[str]:
        """The pools with usable nodes."""
        return list(self._buckets)

    def shapes(self, pools: Sequence[str]) -> dict[Shape, set[str]]:
        """The usable nodes of `pools` by shape (the sets are the index's own when one pool is asked)."""
        if len(pools) == 1:
            return self._buckets.get(pools[0], {})
        out: dict[Shape, set[str]] = {}
        for p in pools:
            for k, s in self._buckets.get(p, {}).items():
                out[k] = out[k] | s if k in out else s
        return out


def place_cores(
    job: JobView,
    nodes: IndexedNodes,
    pools: Sequence[str],
    exclude: frozenset[str],
    allocation: str,
    oversubscribe: float = 1.0,
) -> Parts | Miss | None:
    """`placement.place(job, <the usable nodes of pools less exclude>, allocation, oversubscribe)` for a job
    asking cores only, read from the index; MISS when the index cannot answer."""
    if job.gpus or job.shared_gpu or job.memory_bytes or job.cpus < 1 or nodes.odd:
        return MISS
    if allocation not in ("spread", "pack"):
        return MISS
    ratio = oversubscribe if job.job_class == "agent" else 1.0
    if len(pools) == 1:  # the index's own sets, and their names in order (kept until the set changes)
        pool = pools[0]
        entries = [(shape, names, pool) for shape, names in nodes._buckets.get(pool, {}).items()]
        return on_shapes(job, entries, nodes.ordered, exclude, ratio, allocation, nodes.layout.parts)
    merged = [(shape, names, "") for shape, names in nodes.shapes(pools).items()]
    return on_shapes(job, merged, sorted_of(merged), exclude, ratio, allocation, nodes.layout.parts)


Entry = tuple[Shape, "set[str]", str]
"""(shape, the names of that shape, their pool)"""


def sorted_of(entries: Sequence[Entry]) -> Callable[[str, Shape], list[str]]:
    by_shape = {shape: names for shape, names, _ in entries}
    return lambda _pool, shape: sorted(by_shape[shape])


def on_shapes(
    job: JobView,
    entries: Sequence[Entry],
    ordered: Callable[[str, Shape], list[str]],
    exclude: frozenset[str],
    ratio: float,
    allocation: str,
    made: dict[tuple[str, float], Part] | None = None,
) -> Parts | Miss | None:
    """`placement.place` over the named nodes by shape, less `exclude`; `ordered(pool, shape)` lists a
    shape's names in order; `made` keeps the parts built (`Layout.parts`)."""
    got = take_cores(job, entries, ordered, exclude, ratio, allocation)
    if got is None or got is MISS:
        return got
    if made is None:
        return tuple(Part(name, c, 0, 0) for name, c in got), False
    if len(made) > 100_000:
        made.clear()
    return tuple(made.get(nc) or made.setdefault(nc, Part(*nc, 0, 0)) for nc in got), False


def take_cores(
    job: JobView,
    entries: Sequence[Entry],
    ordered: Callable[[str, Shape], list[str]],
    exclude: frozenset[str],
    ratio: float,
    allocation: str,
) -> list[tuple[str, float]] | Miss | None:
    """`on_shapes` as (node, cores) pairs (a reservation needs only the names: no `Part` is built)."""
    counted = []
    for shape, names, pool in entries:
        n = len(names) - (len(exclude & names) if exclude else 0)
        if n > 0:
            counted.append((shape, n, pool))
    if job.nodes <= 1:
        cost = job.cpus / ratio
        # _single: the fullest node that fits (CPU-only nodes first), then by name; a shape's first name is
        # read only for the best (GPUs, free - cost) so far and on a tie (distinct shapes rarely tie)
        best: tuple[int, float, str] | None = None
        for shape, _, pool in counted:
            if shape[1] + 1e-9 < cost:
                continue
            key = (shape[0], shape[1] - cost)
            if best is None or key <= best[:2]:
                first = next(n for n in ordered(pool, shape) if n not in exclude)
                if best is None or (*key, first) < best:
                    best = (*key, first)
        if best is not None:
            return [(best[2], cost)]
        if allocation == "pack":
            return MISS  # whether it fits a single node's shape at all: scan
    return _spread_cores(job, counted, ordered, exclude)


def _spread_cores(
    job: JobView,
    counted: Sequence[tuple[Shape, int, str]],
    ordered: Callable[[str, Shape], list[str]],
    exclude: frozenset[str],
) -> list[tuple[str, float]] | None:
    """`placement._spread_cores`: nodes with a free core or more, most free first (CPU-only nodes first),
    by name within a shape."""
    usable = sorted((gpu, -free, free, n, pool) for (gpu, free), n, pool in counted if free >= 1)
    if sum(int(free) * n for _, _, free, n, _ in usable) < job.cpus:
        return None
    parts: list[tuple[str, float]] = []
    rem = job.cpus
    for gpu, _, free, _, pool in usable:
        take = int(free)
        for name in ordered(pool, (gpu, free)):
            if name in exclude:
                continue
            c = min(rem, take)
            parts.append((name, float(c)))
            rem -= c
            if rem <= 0:
                break
        if rem <= 0:
            break
    if job.nodes and len(parts) > job.nodes:
        return None
    return parts
