"""Tracking a job's whole process tree on the embedded backend, killing it, and fencing lost attempts.

A job is tracked by every means available at once, so a process that leaves with `setsid` or a double
fork is still found:
- a cgroup (v2, or the v1 memory hierarchy) named `<state id>-<job>.<attempt>`: the state id is unique
  per gateway state directory, so two gateways on one host never touch each other's jobs;
- `PR_SET_CHILD_SUBREAPER` on the shepherd, so orphans re-parent to it instead of to init;
- the job's process group (after the shepherd died, only its members run by the job's user, and none when the
  group's leader is alive with another start time than the job's recorded one: the pid was reused);
- the tag `FRONTDESK_ATTEMPT_TAG=<cgroup name>` in every job process's initial environment, which is how
  a gateway fences an attempt whose shepherd died (the subreaper is gone then, the tag is not).

`kill_all` repeats SIGKILL until nothing is left and says whether it confirmed that. Stdlib only.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path

from frontdesk.procid import boot_id, start_ticks

__all__ = [
    "TAG_VAR",
    "JobCgroup",
    "attempt_pids",
    "fence",
    "kill_all",
    "memory_cgroup_root",
    "nothing_left",
    "proc_table",
    "set_child_subreaper",
    "start_ticks",
    "started_record",
    "state_id",
]

TAG_VAR = "FRONTDESK_ATTEMPT_TAG"
"""The environment variable that marks every process of one attempt."""

_PR_SET_CHILD_SUBREAPER = 36
_PAGE = os.sysconf("SC_PAGE_SIZE")


def state_id(root: Path) -> str:
    """A short id unique to one gateway state directory (created once, kept in `root/state-id`)."""
    path = root / "state-id"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        text = path.read_text().strip()
        if text:
            return text
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    value = secrets.token_hex(4)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)
    return value


def memory_cgroup_root() -> tuple[str, Path] | None:
    """('v2', dir) or ('v1', dir) where this process can create memory cgroups, else None.

    FRONTDESK_NO_CGROUP=1 forces the fallbacks (what unprivileged users get).
    """
    if os.environ.get("FRONTDESK_NO_CGROUP") == "1":
        return None
    v2 = Path("/sys/fs/cgroup")
    try:
        if "memory" in (v2 / "cgroup.controllers").read_text().split():
            base = v2 / "frontdesk"
            base.mkdir(exist_ok=True)
            (v2 / "cgroup.subtree_control").write_text("+memory")
            (base / "cgroup.subtree_control").write_text("+memory")
            return ("v2", base)
    except OSError:
        pass
    v1 = Path("/sys/fs/cgroup/memory")
    try:
        if (v1 / "memory.limit_in_bytes").exists():
            base = v1 / "frontdesk"
            base.mkdir(exist_ok=True)
            if os.access(base, os.W_OK):
                return ("v1", base)
    except OSError:
        pass
    return None


class JobCgroup:
    """One attempt's cgroup: membership for tracking, and a memory limit when the job asked for one."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind, self.path = kind, path

    @classmethod
    def create(cls, kind: str, path: Path, limit: int | None) -> JobCgroup:
        """Make the cgroup (and set its limit); a failure removes what was made and raises OSError."""
        group = cls(kind, path)
        path.mkdir(exist_ok=True)
        try:
            if limit:
                group._limit(limit)
        except OSError:
            group.remove(tries=1)
            raise
        return group

    def _limit(self, limit: int) -> None:
        if self.kind == "v2":
            (self.path / "memory.max").write_text(str(limit))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
            return
        (self.path / "memory.limit_in_bytes").write_text(str(limit))
        swap = self.path / "memory.memsw.limit_in_bytes"
        if swap.exists():
            try:
                swap.write_text(str(limit))
            except OSError:
                pass

    def join(self) -> None:
        """Move the calling process into the cgroup (called in the child before exec)."""
        (self.path / "cgroup.procs").write_text("0")

    def oom_killed(self) -> bool:
        """Whether the kernel killed a member for going over the limit."""
        try:
            name = "memory.events" if self.kind == "v2" else "memory.oom_control"
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def peak(self) -> int | None:
        """Peak memory of the cgroup, where the kernel keeps it."""
        name = "memory.peak" if self.kind == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def pids(self) -> set[int]:
        """The processes in the cgroup now."""
        try:
            return {int(p) for p in (self.path / "cgroup.procs").read_text().split()}
        except (OSError, ValueError):
            return set()

    def remove(self, tries: int = 20) -> bool:
        """Remove the (empty) cgroup; True once it is gone."""
        for i in range(tries):
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if i + 1 < tries:
                    time.sleep(0.05)
        return not self.path.exists()


def set_child_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (Linux prctl); False where unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def proc_table() -> dict[int, tuple[int, int, int, str]]:
    """pid -> (ppid, pgrp, rss bytes, state letter) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                raw = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        try:
            table[int(entry)] = (int(fields[1]), int(fields[2]), int(fields[21]) * _PAGE, fields[0])
        except (IndexError, ValueError):
            continue
    return table


def _descendants(roots: set[int], table: dict[int, tuple[int, int, int, str]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, row in table.items():
        children.setdefault(row[0], []).append(pid)
    found: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _tagged(tag: str, pids: set[int]) -> set[int]:
    needle = f"{TAG_VAR}={tag}\0".encode()
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if data.startswith(needle) or b"\0" + needle in data:
            out.add(pid)
    return out


def started_record(pid: int, started_at: float, enforcement: object) -> dict[str, object]:
    """`started.json`: the job's first process (the leader of its process group) with its start and boot, for a
    fence."""
    record = {"pid": pid, "pid_start": start_ticks(pid), "pid_boot": boot_id()}
    return {**record, "started_at": started_at, "enforcement": enforcement}


def _uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _group(pgid: int, table: dict[int, tuple[int, int, int, str]], owner: tuple[int, int | None] | None) -> set[int]:
    """The members of process group `pgid`; with `owner` (the job's uid, its leader's start) only those that
    surely are the job's: none when the leader is alive with another start (the pid now names another process
    and its group), else the members run by the job's uid (another user's group is never signalled)."""
    members = {pid for pid, row in table.items() if row[1] == pgid}
    if owner is None or not members:
        return members
    uid, leader_start = owner
    if pgid in table and leader_start is not None and start_ticks(pgid) != leader_start:
        return set()
    return {pid for pid in members if _uid_of(pid) == uid}


def attempt_pids(
    *,
    pgid: int | None = None,
    cgroup: JobCgroup | None = None,
    ancestor: int | None = None,
    tag: str | None = None,
    table: dict[int, tuple[int, int, int, str]] | None = None,
    owner: tuple[int, int | None] | None = None,
) -> dict[int, int]:
    """The attempt's live processes -> their RSS: its process group (with `owner`, (uid, leader start), only
    what surely is the job's: `_group`), cgroup, the descendants of `ancestor` (the shepherd, a subreaper) and,
    when `tag` is given, every process carrying the tag."""
    table = proc_table() if table is None else table
    found: set[int] = set()
    if pgid:
        found |= _group(pgid, table, owner)
    if cgroup is not None:
        found |= cgroup.pids()
    if ancestor:
        found |= _descendants({ancestor}, table)
    if tag:
        found |= _tagged(tag, set(table))
    me = os.getpid()
    return {pid: table[pid][2] for pid in found if pid in table and pid not in (me, 1) and table[pid][3] != "Z"}


def nothing_left(pgid: int, cgroup: JobCgroup | None) -> bool:
    """True when a subreaper's job surely left nothing: an empty cgroup, an empty process group and no child
    of this process at all (orphans re-parent to a subreaper, so no child means no descendant). Three system
    calls instead of reading every process on the host; False (then look the slow way) when unsure."""
    if cgroup is None or cgroup.pids():
        return False
    try:
        os.killpg(pgid, 0)
        return False
    except ProcessLookupError:
        pass
    except OSError:
        return False
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return False


def kill_all(find: Callable[[], dict[int, int]], sig: int = signal.SIGKILL, timeout: float = 10.0) -> bool:
    """Send `sig` to everything `find` returns, again and again (a fork races one pass), until `find`
    returns nothing (zombies do not count); True when that was confirmed within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        pids = find()
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if sig != signal.SIGKILL or time.monotonic() > deadline:
            return not find() if sig == signal.SIGKILL else False
        time.sleep(0.02)


def fence(
    launch: dict[str, object], started_pid: int | None, timeout: float = 10.0, pid_start: int | None = None
) -> bool:
    """Kill every process of an attempt whose shepherd is gone; True once none is left (and its cgroup
    is removed). A gateway calls this before it declares the attempt lost or runs it again. Its process group
    is the job's only while its members run as the job's user and its leader, if alive, started at `pid_start`
    (the shepherd's record): after the shepherd died the pid may name another user's process group."""
    tag = str(launch.get("cgroup") or "") or None
    group = None
    root = memory_cgroup_root()
    if root is not None and tag is not None:
        group = JobCgroup(root[0], root[1] / tag)
    run_as = launch.get("run_as")
    uid = run_as.get("uid") if isinstance(run_as, dict) else None
    owner = (uid if isinstance(uid, int) else os.getuid(), pid_start)
    done = kill_all(lambda: attempt_pids(pgid=started_pid, cgroup=group, tag=tag, owner=owner), timeout=timeout)
    if done and group is not None:
        done = group.remove()
    return done
