"""The shepherd's watch loop over a running job: samples, the output cap, a suspension, the first reason to end it.

Stdlib only (the shepherd imports it and starts fast). The walltime limit counts the time the job ran, not the
time it was suspended (freezing.py): a job frozen for a trial ends that much later.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from frontdesk.backends.freezing import Pause
from frontdesk.backends.gpuwatch import GpuWatch
from frontdesk.backends.outputcap import OutputCap
from frontdesk.backends.tracking import JobCgroup, attempt_pids, kill_all
from frontdesk.jobs.state import JobState

if TYPE_CHECKING:
    import resource

__all__ = ["KILL_GRACE_SECONDS", "SAMPLE_SECONDS", "Watch", "enforcement", "kill_tree", "reap_adopted", "say"]

SAMPLE_SECONDS = 0.1
KILL_GRACE_SECONDS = 2.0


def kill_tree(root: int, pgid: int, cgroup: JobCgroup | None, sig: int) -> None:
    """Signal the job's tree: its group first in one call (else a shell whose child died ran on), then the rest."""
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)
    kill_all(lambda: attempt_pids(pgid=pgid, cgroup=cgroup, ancestor=os.getpid()), sig=sig, timeout=0)


def say(launch: dict[str, Any], line: str) -> None:
    """One line at the end of the job's stderr (where the job's own last words are read)."""
    try:
        fd = os.open(launch["stderr"], os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        with os.fdopen(fd, "ab") as fh:
            fh.write(line.encode() + b"\n")
    except OSError:
        pass


def reap_adopted(main_pid: int) -> None:
    """Collect adopted orphans that exited (never the job's main process, which wait4 collects)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == main_pid:
            return
        try:
            os.waitpid(info.si_pid, os.WNOHANG)
        except ChildProcessError:
            return


def enforcement(cgroup: JobCgroup | None, limit: Any) -> str | None:
    """How memory is enforced: the cgroup's kind, a resident-set watchdog, or nothing (no limit)."""
    return cgroup.kind if cgroup else ("rss" if limit else None)


class Watch:
    """The watch loop over the running job: samples, the output cap, and the first reason to end it."""

    def __init__(
        self, launch: dict[str, Any], pid: int, cgroup: JobCgroup | None, started: float, pause: Pause | None = None
    ) -> None:
        self.launch, self.pid, self.cgroup, self.started = launch, pid, cgroup, started
        self.pause = pause
        """Set for a job the gateway may suspend (freezing.py)."""
        self.limit, self.walltime = launch.get("memory_bytes"), launch.get("walltime_seconds")
        self.cap = OutputCap(launch)
        devices, apps = launch["env"].get("CUDA_VISIBLE_DEVICES", ""), launch.get("gpu_apps")
        self.gpus = GpuWatch(devices, launch.get("gpu_memory_limit"), apps=apps if isinstance(apps, str) else None)
        self.peak, self.status = 0, 0
        self.why: JobState | None = None
        self.gpu_over: str | None = None
        self.deadline_kill: float | None = None
        self.rusage: resource.struct_rusage | None = None

    def run(self, cancelled: Callable[[], bool]) -> None:
        """Until the job's main process exits (wait4); its status and rusage are kept."""
        pidfd = os.pidfd_open(self.pid)
        while True:
            select.select([pidfd], [], [], SAMPLE_SECONDS)
            pid, st, ru = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self.status, self.rusage = st, ru
                break
            self.tick(time.time(), cancelled())
        os.close(pidfd)

    def tree(self) -> dict[int, int]:
        """The job's live processes -> their RSS."""
        return attempt_pids(pgid=self.pid, cgroup=self.cgroup, ancestor=os.getpid())

    def tick(self, now: float, cancelled: bool) -> None:
        """One sample: follow a suspend request, measure, and end the job at the first reason to."""
        reap_adopted(self.pid)
        pause = self.pause
        if pause is not None:  # thawed first when ending: a frozen process takes no signal
            pause.tick(now, cancelled or self.why is not None, self.pid, self.tree)
        tree = self.tree()
        rss = sum(tree.values())
        self.peak = max(self.peak, rss)
        over = self.gpus.sample(now, tree)
        self.cap.check()
        if self.why is None:
            if cancelled:
                self.why = JobState.CANCELLED
            elif (
                self.walltime
                and not (pause and pause.frozen)
                and now - self.started - self._paused(now) > self.walltime
            ):
                self.why = JobState.TIMEOUT
            elif over or (self.limit and self.cgroup is None and rss > int(self.limit)):
                # a shared GPU's cap, or host memory without a cgroup
                self.why, self.gpu_over = JobState.OUT_OF_MEMORY, over
                if over:
                    rule = " (a shared GPU holds only what was asked)" if self.gpus.limit else ""  # else in `over`
                    say(self.launch, f"frontdesk: {over}; the job was ended{rule}")
            if self.why:
                if pause is not None:
                    pause.tick(now, True, self.pid, self.tree)
                sig = signal.SIGKILL if self.why == JobState.OUT_OF_MEMORY else signal.SIGTERM
                kill_tree(self.pid, self.pid, self.cgroup, sig)
                self.deadline_kill = now + KILL_GRACE_SECONDS
        elif self.deadline_kill and now > self.deadline_kill:
            kill_tree(self.pid, self.pid, self.cgroup, signal.SIGKILL)
            self.deadline_kill = None

    def _paused(self, now: float) -> float:
        """Seconds suspended so far: the walltime limit does not count them."""
        return self.pause.suspended_s(now) if self.pause is not None else 0.0
