"""The process sampler: each tick reads only processes not seen before; dead ones are forgotten.

A process is keyed by (pid, start time), recorded once, with its attribution inherited from its parent (the
parent is attributed first, in the same tick when both are new). Memory is bounded by the live process table:
a pid no longer listed at a full listing is evicted. A process born and gone between two ticks is not seen
(at 5 Hz: anything living under 200 ms may be missed).
"""

from __future__ import annotations

import os
import shlex
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from frontdesk.telemetry import procfs
from frontdesk.telemetry.attribution import Actor, Attribution, Harness, attribute
from frontdesk.telemetry.classify import CommandClass, classify

__all__ = ["ProcessRecord", "Sampler", "SamplerStats"]

_ANCESTRY_MAX = 16
_RETRIES = 3  # samples a forked-not-yet-exec'd process is put off before it is taken as it is
_RANGE_MAX = 4096
_NO_ARGV = hash(())  # more pids allocated than this since the last sample: list /proc instead


@dataclass(frozen=True)
class ProcessRecord:
    """One process seen for the first time, attributed to an agent or a person."""

    host: str
    pid: int
    ppid: int
    start_time: float
    seen_at: float
    uid: int
    tty: int
    comm: str
    argv: str
    """The command line (shell-quoted), redacted."""
    cwd: str | None
    ancestry: tuple[str, ...]
    """The executable names of its ancestors, nearest first."""
    actor: Actor
    harness: Harness | None
    classes: tuple[CommandClass, ...]


@dataclass
class SamplerStats:
    """Counters since the sampler started."""

    ticks: int = 0
    recorded: int = 0
    excluded: int = 0
    evicted: int = 0
    live: int = 0


@dataclass(slots=True)
class _Seen:
    start_ticks: int
    ppid: int
    comm: str
    attribution: Attribution
    argv_key: int
    """hash of its argv: a child with its parent's argv has forked but not yet exec'd."""


class Sampler:
    """Samples the process table; `tick()` returns the attributed processes new since the last tick.

    Between full listings of /proc (every `full_every` samples, which also evict dead pids), a sample reads
    only the pids the kernel allocated since the last one (`last_pid` of /proc/loadavg), so its cost follows
    the rate of new processes rather than the size of the process table.
    """

    def __init__(
        self, redact: Callable[[str], str], proc: str = "/proc", host: str | None = None, full_every: int = 25
    ) -> None:
        self._redact = redact
        self._proc = proc
        self.host = host or socket.gethostname()
        self._known: dict[int, _Seen] = {}
        self._retry: dict[int, int] = {}  # pid -> samples it was put off (forked, not yet exec'd)
        self._names: set[str] = set()  # the pids of _known, as /proc lists them
        self._other: set[str] = set()  # /proc entries that are not processes
        self._boot = procfs.boot_time(proc)
        self._hz = procfs.clock_ticks()
        self._self = os.getpid()
        self._last: int | None = None
        self.full_every = full_every
        self.stats = SamplerStats()

    def tick(self) -> list[ProcessRecord]:
        """One sample: attribute and return the processes new since the last one."""
        now = time.time()
        last = procfs.last_pid(self._proc)
        prev, self._last = self._last, last
        ranged = last is not None and prev is not None and 0 <= last - prev <= _RANGE_MAX
        if ranged and self.stats.ticks % self.full_every:
            stats = self._scan_range(prev or 0, last or 0)
        else:
            stats = self._scan_all()
        for pid in list(self._retry):
            st = procfs.read_stat(pid, self._proc)
            if st is None:
                del self._retry[pid]
            else:
                stats[pid] = st
        out: list[ProcessRecord] = []
        done: set[int] = set()
        for pid in sorted(stats):
            self._visit(pid, stats, now, out, done)
        self.stats.ticks += 1
        self.stats.live = len(self._known)
        return out

    def _scan_all(self) -> dict[int, procfs.ProcStat]:
        """List /proc: evict the dead, read the new."""
        names = set(os.listdir(self._proc))  # set algebra on the names: per-name Python work costs more than listdir
        for name in self._names - names:
            self._names.discard(name)
            self._known.pop(int(name), None)
            self._retry.pop(int(name), None)
            self.stats.evicted += 1
        stats: dict[int, procfs.ProcStat] = {}
        for name in names - self._names - self._other:
            if not name.isdigit():
                self._other.add(name)
                continue
            self._names.add(name)
            st = procfs.read_stat(int(name), self._proc)
            if st is not None:
                stats[st.pid] = st
        return stats

    def _scan_range(self, prev: int, last: int) -> dict[int, procfs.ProcStat]:
        """Read only the pids allocated since the last sample (a reused pid is a new process)."""
        stats: dict[int, procfs.ProcStat] = {}
        for pid in range(prev + 1, last + 1):
            st = procfs.read_stat(pid, self._proc)
            if st is None:
                continue
            seen = self._known.get(pid)
            if seen is not None and seen.start_ticks == st.start_ticks:
                continue
            if procfs.is_thread(pid, self._proc):
                continue
            self._known.pop(pid, None)
            self._names.add(str(pid))
            stats[pid] = st
        return stats

    def _visit(
        self, pid: int, new: dict[int, procfs.ProcStat], now: float, out: list[ProcessRecord], done: set[int]
    ) -> None:
        chain: list[procfs.ProcStat] = []  # new ancestors not yet attributed, this process first
        cur: int | None = pid
        while cur is not None and cur in new and cur not in done and cur not in self._known and len(chain) < 4096:
            chain.append(new[cur])
            cur = new[cur].ppid if new[cur].ppid != cur else None
        for st in reversed(chain):
            done.add(st.pid)
            self._attribute(st, now, out)

    def _parent(self, ppid: int, now: float, out: list[ProcessRecord]) -> _Seen | None:
        """The parent as known, attributed again first when it was excluded and has exec'd since (a wrapper
        that became a shell or an agent: its children are how this is noticed, at one read each)."""
        seen = self._known.get(ppid)
        if seen is None or seen.attribution.actor is not Actor.EXCLUDED:
            return seen
        st = procfs.read_stat(ppid, self._proc)
        if st is None or st.start_ticks != seen.start_ticks or (st.comm == seen.comm and st.tty == 0):
            return seen
        del self._known[ppid]
        self.stats.excluded -= 1
        self._attribute(st, now, out)
        return self._known.get(ppid)

    def _put_off(self, st: procfs.ProcStat, parent: _Seen | None, argv_key: int) -> bool:
        """Whether to look at this process again next sample: it has forked but not exec'd yet (same argv
        as its parent: the exec about to come decides what it is), or its parent is put off itself."""
        if self.stats.ticks == 0:
            return False  # the table as found at start: settled, and put off in bulk it would cost a lot
        tries = self._retry.get(st.pid, 0)
        forked = parent is not None and parent.argv_key == argv_key and argv_key != _NO_ARGV  # kernel threads
        waiting = forked or st.ppid in self._retry
        if waiting and tries < _RETRIES:
            self._retry[st.pid] = tries + 1
            return True
        self._retry.pop(st.pid, None)
        return False

    def _attribute(self, st: procfs.ProcStat, now: float, out: list[ProcessRecord]) -> None:
        parent = self._parent(st.ppid, now, out)
        argv = procfs.read_argv(st.pid, self._proc)
        argv_key = hash(tuple(argv))
        if self._put_off(st, parent, argv_key):
            return
        env = procfs.read_markers(st.pid, self._proc) if argv else {}
        got = attribute(st.comm, argv, env, st.tty, parent.attribution if parent else None)
        if st.pid == self._self:
            got = Attribution(Actor.EXCLUDED)  # never count the observer itself
        self._known[st.pid] = _Seen(st.start_ticks, st.ppid, st.comm, got, argv_key)
        if got.actor is Actor.EXCLUDED:
            self.stats.excluded += 1
            return
        self.stats.recorded += 1
        out.append(self._record(st, now, argv, got))

    def _record(self, st: procfs.ProcStat, now: float, argv: list[str], got: Attribution) -> ProcessRecord:
        return ProcessRecord(
            host=self.host,
            pid=st.pid,
            ppid=st.ppid,
            start_time=round(self._boot + st.start_ticks / self._hz, 2),
            seen_at=round(now, 3),
            uid=st.uid,
            tty=st.tty,
            comm=st.comm,
            argv=self._redact(shlex.join(argv) if argv else f"[{st.comm}]"),
            cwd=procfs.read_cwd(st.pid, self._proc),
            ancestry=self._ancestry(st.ppid),
            actor=got.actor,
            harness=got.harness,
            classes=classify(argv),
        )

    def _ancestry(self, ppid: int) -> tuple[str, ...]:
        names: list[str] = []
        cur = self._known.get(ppid)
        while cur is not None and len(names) < _ANCESTRY_MAX:
            names.append(cur.comm)
            cur = self._known.get(cur.ppid) if cur.ppid else None
        return tuple(names)
