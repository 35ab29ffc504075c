"""RLScheduler's test protocol (Zhang et al., SC20; github:DIR-LAB/deep-batch-scheduler), replayed exactly.

Its table (README, "Results of Scheduling Towards average bounded slowdown") averages, over 10 sequences of
1,024 consecutive jobs whose first index is drawn by gym's `np_random(1)` (numpy's MT19937 `RandomState`,
`randint(1024, n - 1025)` per sequence, or `randint(1024, 10000 - 1025)` with its `batch_job_slice` of
10,000), the mean bounded slowdown (tau = 10 s) of those 1,024 jobs scheduled from an empty machine:

- its trace reader: allocated = max(allocated, requested processors); a requested time of -1 becomes the
  runtime; a negative runtime becomes 10; zero-runtime jobs are dropped; jobs sorted by job number;
- its machine: `MaxNodes` nodes of `MaxProcs / MaxNodes` processors, a job takes ceil(procs / per node) whole
  nodes (`MaxProcs` falls back to `MaxNodes`);
- FCFS: start jobs in submission order; the blocked head waits, arrivals only queue;
- FCFS with backfilling (its `moveforward_for_resources_backfill_greedy`): the head's start time is estimated
  once, when it blocks (running jobs' start + requested time, in that order, until enough processors);
  until the head fits, any queued job that fits now and whose requested time ends strictly before that
  estimate starts. There is no "extra processors" rule, and the estimate is never revised.

The random stream is numpy's legacy `randint` on an MT19937 seeded by gym's `hash_seed`, reproduced here with
the standard library (Python's `random` shares MT19937 and `init_by_array`). Pure: text in, numbers out.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import random
import struct
from dataclasses import dataclass

__all__ = ["SEQUENCE", "RlJob", "RlTrace", "gym_starts", "parse_rl_trace", "schedule_sequence"]

SEQUENCE = 1024
"""Jobs per test sequence (`--len 1024` in its make_table_script.py)."""


@dataclass(frozen=True)
class RlJob:
    """One job as RLScheduler's reader keeps it."""

    number: int
    submit: int
    runtime: int
    procs: int
    requested: int
    user: int


@dataclass(frozen=True)
class RlTrace:
    """Its kept jobs and its machine."""

    jobs: tuple[RlJob, ...]
    nodes: int
    procs: int

    @property
    def per_node(self) -> float:
        """Processors per node (a float, as in its cluster.py)."""
        return self.procs / self.nodes


def _header_int(line: str) -> int:
    return int(line.split(":", 1)[1].strip())


def parse_rl_trace(text: str) -> RlTrace:
    """SWF text read the way RLScheduler's job.py reads it."""
    nodes = procs = 0
    jobs = []
    for line in text.splitlines():
        if line.startswith(";"):
            if line.startswith("; MaxNodes:"):
                nodes = _header_int(line)
            elif line.startswith("; MaxProcs:"):
                procs = _header_int(line)
            continue
        f = line.split()
        if len(f) < 12:
            continue
        runtime = int(f[3])
        alloc = max(int(f[4]), int(f[7]))
        req = int(f[8])
        runtime = 10 if runtime < 0 else runtime
        if runtime > 0:
            jobs.append(RlJob(int(f[0]), int(f[1]), runtime, alloc, runtime if req == -1 else req, int(f[11])))
    if nodes <= 0:
        raise ValueError("RLScheduler's reader needs a '; MaxNodes:' header")
    jobs.sort(key=lambda j: j.number)
    return RlTrace(tuple(jobs), nodes, procs or nodes)


class _NumpyLegacy:
    """numpy's `RandomState(seed_list).randint(low, high)` (masked rejection), on Python's MT19937."""

    def __init__(self, words: list[int]) -> None:
        key = 0
        for k, w in enumerate(words):
            key |= w << (32 * k)
        self.mt = random.Random(key)  # random.seed(int) runs init_by_array on the int's 32-bit words, low first

    def randint(self, low: int, high: int) -> int:
        rng = high - 1 - low
        if rng <= 0:
            return low
        mask = (1 << rng.bit_length()) - 1
        while True:
            v = self.mt.getrandbits(32) & mask
            if v <= rng:
                return low + v


def _gym_seed_words(seed: int) -> list[int]:
    """gym's seeding.np_random(seed): _int_list_from_bigint(hash_seed(create_seed(seed)))."""
    digest = hashlib.sha512(str(seed % 2**64).encode()).digest()[:8] + b"\0" * 4
    big = sum(w << (32 * k) for k, w in enumerate(struct.unpack("<3I", digest)))
    words = []
    while big > 0:
        big, mod = divmod(big, 2**32)
        words.append(mod)
    return words or [0]


def gym_starts(n_jobs: int, seed: int = 1, iters: int = 10, length: int = SEQUENCE, batch_slice: int = 0) -> list[int]:
    """The first job index of each test sequence, as its `reset_for_test` draws them."""
    rng = _NumpyLegacy(_gym_seed_words(seed))
    top = (batch_slice or n_jobs) - length - 1
    return [rng.randint(length, top) for _ in range(iters)]


class _Machine:
    def __init__(self, trace: RlTrace) -> None:
        self.free = trace.nodes
        self.per_node = trace.per_node
        self.running: list[tuple[int, int, int, RlJob]] = []
        """(actual end, tie, nodes, job): a heap."""
        self.starts: dict[int, int] = {}
        self.tie = 0

    def nodes_of(self, job: RlJob) -> int:
        return int(math.ceil(float(job.procs) / self.per_node))

    def fits(self, job: RlJob) -> bool:
        return self.nodes_of(job) <= self.free

    def start(self, job: RlJob, now: int) -> None:
        n = self.nodes_of(job)
        self.free -= n
        self.starts[job.number] = now
        self.tie += 1
        heapq.heappush(self.running, (now + job.runtime, self.tie, n, job))

    def estimate(self, job: RlJob) -> int:
        """Its earliest start estimate: requested ends, in order, until enough processors."""
        free = self.free * self.per_node
        when = 0
        for _, _, n, r in sorted(self.running, key=lambda x: (self.starts[x[3].number] + x[3].requested, x[1])):
            free += n * self.per_node
            when = self.starts[r.number] + r.requested
            if free >= job.procs:
                break
        return when


def schedule_sequence(trace: RlTrace, first: int, backfill: bool, length: int = SEQUENCE) -> dict[int, int]:
    """Start times of jobs `first .. first + length - 1` under its FCFS (with its backfilling if asked)."""
    jobs = trace.jobs
    last = first + length
    m = _Machine(trace)
    now = jobs[first].submit
    queue = [jobs[first]]
    nxt = first + 1

    def step() -> None:  # one arrival (preferred on ties) or one release
        nonlocal now, nxt
        release = m.running[0][0] if m.running else math.inf
        if nxt < last and jobs[nxt].submit <= release:
            now = max(now, jobs[nxt].submit)
            queue.append(jobs[nxt])
            nxt += 1
        else:
            now = max(now, int(release))
            _, _, n, _ = heapq.heappop(m.running)
            m.free += n

    while True:
        queue.sort(key=lambda j: j.submit)  # its fcfs_score, a stable sort
        head = queue[0]
        if not m.fits(head):
            estimate = m.estimate(head) if backfill else 0
            while not m.fits(head):
                if backfill:
                    for j in list(queue):
                        if now + j.requested < estimate and m.fits(j):
                            m.start(j, now)
                            queue.remove(j)
                step()
        m.start(head, now)
        queue.remove(head)
        while not queue:
            if nxt >= last:
                return m.starts
            step()
