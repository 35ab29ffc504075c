"""`LocalBackend`: the embedded backend's queue, resources and GPU assignment, and its scheduling loop.

Each started attempt gets a detached shepherd (backends/shepherd.py) that enforces walltime and memory and
leaves result.json behind in its attempt folder (files.py), so a restarted gateway picks up queued, running
and finished attempts. A picker may start granted trials on the cores of batch jobs it suspends (lending.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from frontdesk.backends.base import BackendJob, BackendStatus, Inventory, JobState, PushHint
from frontdesk.backends.gpushare import Hold
from frontdesk.backends.local.ends import EndNotices
from frontdesk.backends.local.files import AttemptFiles, give_job_files, holds_of
from frontdesk.backends.local.gpupoll import GpuPoll
from frontdesk.backends.local.lending import Picks
from frontdesk.backends.local.lost import record_lost
from frontdesk.backends.local.procs import exited, mem_total, spawn_shepherd
from frontdesk.backends.local.scheduling import FreeResources, QueuedJob, Scheduler, greedy_pick, take_gpus
from frontdesk.backends.local.suspending import Running, Suspending
from frontdesk.backends.localgpu import detect_gpus, device_views, gpu_env, ledger_of, never_fits_gpu
from frontdesk.backends.runas import for_job
from frontdesk.backends.shepherd import write_json
from frontdesk.backends.tracking import state_id
from frontdesk.config import Settings
from frontdesk.errors import BackendError
from frontdesk.jobenv import login_env
from frontdesk.procid import running as proc_runs
from frontdesk.procid import send
from frontdesk.tasks import cancel_and_wait

__all__ = ["LocalBackend"]

log = logging.getLogger("frontdesk.local")

_OUTPUT_MAX = "1G"
"""Default cap on each of a job's output files ([local] output_max_bytes; 0 for none)."""


class LocalBackend:
    """Runs attempts on this machine; see the module docstring."""

    name = "local"

    def __init__(self, settings: Settings) -> None:
        from frontdesk.spec.units import parse_memory

        self.settings = settings
        self.root = settings.home / "local"
        self.root.mkdir(parents=True, exist_ok=True)
        self.files = AttemptFiles(self.root)
        self.state_id = state_id(self.root)
        """Unique per state directory: names this gateway's cgroups and tags its jobs' processes."""
        self.output_max_bytes = parse_memory(settings.section("local").get("output_max_bytes", _OUTPUT_MAX))
        gpus = detect_gpus()
        if settings.local_gpus is not None:
            gpus = (
                gpus[: settings.local_gpus]
                if gpus
                else [{"index": i, "model": "virtual", "memory_bytes": 0} for i in range(settings.local_gpus)]
            )
        self.gpu_info = gpus
        mem = parse_memory(settings.local_memory) if settings.local_memory else mem_total()
        self._inventory = Inventory(cpus=settings.local_cpus or os.cpu_count() or 1, memory_bytes=mem, gpus=tuple(gpus))
        self.scheduler: Scheduler = greedy_pick
        self.hold_reason: Callable[[], str | None] = lambda: None
        """Why nothing starts although resources are free (a plug-in's drain); None when nothing holds."""
        self._disk_hold: str | None = None
        self._launch_logged = 0.0
        self.queue: dict[str, QueuedJob] = {}
        self.running: dict[str, Running] = {}
        self.gpu_poll = GpuPoll(self.root / "gpu-apps.json", gpus, self.running)  # jobs that asked no GPU
        self.suspending = Suspending(self.files)
        """Groups of suspended jobs and the trials on their cores (suspending.py, lending.py)."""
        self._push: PushHint = lambda ids: None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.ends = EndNotices(self.root / "ends.sock", self._shepherd_of, lambda bid: self._push([bid]))
        """Where shepherds say their attempt ended (ends.py): one datagram instead of an HTTP notify."""

    # -- Protocol ---------------------------------------------------------------------------------
    def inventory(self) -> Inventory:
        """CPUs, memory and GPUs of this machine (or as declared in [local])."""
        return self._inventory

    def gpu_view(self) -> list[dict[str, Any]]:
        """Each GPU: memory, memory free to shared jobs, whole/shared/free and the jobs holding it."""
        held = (
            (r.job.job_id, str(r.job.extra.get("principal") or ""), h) for r in self.running.values() for h in r.holds
        )
        return device_views(self._inventory.gpus, held)

    async def start(self, push: PushHint) -> None:
        """Recover attempts left by an earlier gateway, then run the scheduling loop."""
        self._push = push
        self.ends.open(asyncio.get_running_loop())
        self._recover()
        self._task = asyncio.get_running_loop().create_task(self._loop())
        self.gpu_poll.start()

    async def stop(self) -> None:
        """Stop scheduling; running shepherds carry on without the gateway."""
        self.ends.close()
        await self.gpu_poll.stop()
        await cancel_and_wait(self._task)

    async def submit(self, job: BackendJob) -> str:
        """Write the attempt's launch file and queue it."""
        bid = f"{job.job_id}.{job.attempt}"
        never = self._never_fits(job)
        if never:
            raise BackendError(f"the job can never run here: {never}")
        adir = self.root / bid
        adir.mkdir(mode=0o700, parents=True, exist_ok=True)
        who = for_job(job.uid, job.extra.get("policy", {}).get("principal"))
        give_job_files(job.job_dir, who)
        # The submitter's login defaults and the stored (submitted, site-filtered) environment; never ours.
        # FRONTDESK_SOCKET (unless the submitter set one): a `frontdesk` call inside the job reaches this gateway.
        base = {**login_env(who.name, who.home, who.shell), "FRONTDESK_SOCKET": str(self.settings.socket)}
        env = {**base, **job.env}
        launch = {
            "backend_id": bid,
            "key": job.key,
            "job_id": job.job_id,
            "argv": job.argv,
            "cwd": str(job.workdir),
            "env": env,
            "stdout": str(job.job_dir / "stdout.log"),
            "stderr": str(job.job_dir / "stderr.log"),
            "memory_bytes": job.memory_bytes,
            "walltime_seconds": job.walltime_seconds,
            "notify_socket": str(self.settings.socket),
            "ends_socket": str(self.ends.path) if self.ends.bound else None,
            "cgroup": f"{self.state_id}-{bid}",
            "output_max_bytes": self.output_max_bytes,
            "landlock_writable": job.extra.get("landlock_writable"),
            "run_as": who.to_json(),
            "script": str(job.job_dir / "script") if job.script_text is not None else None,
            "queued": asdict(self._queued(bid, job)),
        }
        write_json(adir / "launch.json", launch)
        self.queue[bid] = self._queued(bid, job)
        self._wake.set()
        return bid

    async def cancel(self, backend_id: str) -> None:
        """Drop a queued attempt, or have its shepherd kill the whole process tree."""
        if backend_id in self.queue:
            del self.queue[backend_id]
            self.files.write_cancelled(backend_id)
            self._push([backend_id])
            return
        run = self.running.get(backend_id)
        (self.root / backend_id / "cancel").touch(mode=0o600)
        if run and run.proc is not None:
            send(run.proc, signal.SIGTERM)  # adopted: only while that very shepherd runs (pids are reused)
        elif run:
            try:
                os.kill(run.pid, signal.SIGTERM)  # our unreaped child: its pid is not reused meanwhile
            except ProcessLookupError:
                pass

    async def query(self, backend_ids: Sequence[str]) -> dict[str, BackendStatus]:
        """Each attempt's state, from memory for queued ones and from its files otherwise."""
        out = {}
        for bid in backend_ids:
            status = self._status(bid)
            if status is not None:
                out[bid] = status
        return out

    async def lookup(self, keys: Sequence[str], owners: Mapping[str, int] | None = None) -> dict[str, str]:
        """Backend ids for `fd-<job>.<attempt>` keys that reached this backend (attempt folders are the
        gateway's own: nobody else can make one, so `owners` needs no check here)."""
        found = {}
        for key in keys:
            bid = key.removeprefix("fd-")
            if self.files.exists(bid, "launch.json"):
                found[key] = bid
        return found

    # -- internals --------------------------------------------------------------------------------
    def _shepherd_of(self, bid: str) -> int | None:
        run = self.running.get(bid)
        return run.pid if run else None

    def _queued(self, bid: str, job: BackendJob) -> QueuedJob:
        return QueuedJob(
            backend_id=bid,
            job_id=job.job_id,
            cpus=job.cpus,
            memory_bytes=job.memory_bytes or 0,
            gpus=job.gpus,
            gpu_types=tuple(t.lower() for t in job.gpu_types),
            walltime_seconds=job.walltime_seconds,
            priority=job.priority,
            queued_at=time.time(),
            partition=job.partition,
            extra=dict(job.extra.get("policy", {})),
            gpu_memory_bytes=job.gpu_memory_bytes,
            gpu_share=job.gpu_share,
        )

    def _never_fits(self, job: BackendJob) -> str | None:
        """Why a job can never fit this host (so it is refused, never PENDING forever), or None."""
        from frontdesk.spec.units import format_bytes

        inv = self._inventory
        if job.cpus > inv.cpus:
            return f"it asks for {job.cpus} CPUs and this host has {inv.cpus}"
        if job.memory_bytes and job.memory_bytes > inv.memory_bytes:
            have = format_bytes(inv.memory_bytes)
            return f"it asks for {format_bytes(job.memory_bytes)} of memory and this host has {have}"
        return never_fits_gpu(job, inv.gpus)

    def _write_lost(self, bid: str) -> bool:
        """Record an attempt whose shepherd died without leaving a result, once its processes are fenced
        (lost.py); False while it is not fenced or its record could not be written (tried again next pass)."""
        try:
            if record_lost(self.files, bid):
                return True
        except OSError as exc:  # a full disk: tried again on the next pass
            self._launch_failed(bid, exc)
            return False
        log.warning("attempt %s: its shepherd died and some of its processes survive a kill; retrying", bid)
        return False

    def _status(self, bid: str) -> BackendStatus | None:
        if bid in self.queue:
            reason = self._disk_hold or self.hold_reason() or "Resources"
            return BackendStatus(backend_id=bid, state=JobState.PENDING, reason=reason)
        return self.files.status(bid, running=bid in self.running)

    def _recover(self) -> None:
        for adir in sorted(self.root.iterdir()):
            bid = adir.name
            launch = self.files.read(bid, "launch.json")
            if launch is None or (adir / "result.json").exists():
                continue
            queued = QueuedJob(**{**launch["queued"], "gpu_types": tuple(launch["queued"]["gpu_types"])})
            proc = self.files.shepherd_pid(bid)
            if proc is None:
                self.queue[bid] = queued
            elif proc_runs(proc):  # that very shepherd (its start too): a reused pid is another process
                holds = holds_of(launch)
                started = self.files.read(bid, "started.json") or {}
                job = replace(queued, started_at=started.get("started_at"))
                suspendable = self.suspending.recover(bid, launch, job.cpus)
                self.running[bid] = Running(job, holds, proc.pid, suspendable, proc)
            elif not self._write_lost(bid):
                self.running[bid] = Running(queued, (), proc.pid, proc=proc)  # not fenced yet: _reap tries again
        self.suspending.resume_orphans(self.running)

    def _free(self) -> FreeResources:
        inv = self._inventory
        holds = tuple(h for r in self.running.values() for h in r.holds)
        ledger = ledger_of(inv.gpus, holds)
        return FreeResources(
            cpus=inv.cpus - self.suspending.cpus_held(self.running),
            memory_bytes=inv.memory_bytes - sum(r.job.memory_bytes for r in self.running.values()),
            gpus=tuple(ledger.free_whole()),
            gpu_models=ledger.models,
            running=tuple(r.job for r in self.running.values()),
            total_cpus=inv.cpus,
            total_memory_bytes=inv.memory_bytes,
            gpu_memory=ledger.memory,
            gpu_holds=holds,
            suspensions=self.suspending.view(self.running),
        )

    async def _loop(self) -> None:
        try:
            while True:
                try:
                    async with asyncio.timeout(0.2):  # not wait_for: it can drop stop()'s cancel (gh-86296)
                        await self._wake.wait()
                except TimeoutError:
                    pass
                self._wake.clear()
                self._pass()
        finally:  # the end-notice socket lives as long as this loop (also when its event loop just ends)
            self.ends.close()

    def _pass(self) -> None:
        try:
            ended = self._reap()
            started = self._schedule()
            if ended or started:
                self._push(ended + started)
        except Exception:
            log.exception("local scheduling pass failed")

    def _reap(self) -> list[str]:
        ended = []
        for bid, run in list(self.running.items()):
            # Never block here: a shepherd that wrote its result may still be telling us so over the socket.
            if not exited(run.pid, run.proc):
                continue
            if not self.files.exists(bid, "result.json"):
                owner = self.files.shepherd_pid(bid)
                if owner and owner.pid != run.pid and proc_runs(owner):
                    run.pid, run.proc = owner.pid, owner  # a shepherd from before a restart owns it: follow it
                    continue
                if not self._write_lost(bid):
                    continue
            del self.running[bid]
            self.files.forget(bid)
            ended.append(bid)
            self.suspending.ended(bid)  # a group's last trial: its victims resume
        return ended

    def _schedule(self) -> list[str]:
        if not self.queue:
            return []
        free = self._free()
        answer = self.scheduler(list(self.queue.values()), free, time.time())
        picks = answer if isinstance(answer, Picks) else Picks(answer)
        started: list[str] = []
        ledger = free.ledger()
        for bid in picks.starts:
            job = self.queue.get(bid)
            holds = take_gpus(job, ledger) if job is not None else None
            if job is None or holds is None:
                continue  # devices are given here: a pick whose GPUs are taken waits for the next pass
            if not self._start(bid, job, holds, bid in picks.suspendable):
                return started
            started.append(bid)
        for lend in picks.lends:
            if not self.suspending.holds(lend, self.queue, self.running):
                continue
            record = self.suspending.suspend_for(lend, self.running)  # the victims asked to freeze first
            if record is None or not self._start(lend.trial, self.queue[lend.trial], (), False, record):
                self.suspending.ended(lend.trial)  # nothing started on their cores: they resume
                break
            started.append(lend.trial)
        return started

    def _start(self, bid: str, job: QueuedJob, holds: tuple[Hold, ...], freezer: bool, lent: Any = None) -> bool:
        """Launch a queued attempt; False (it stays queued, the pass stops) when its files cannot be written."""
        del self.queue[bid]
        try:
            self._launch(bid, replace(job, started_at=time.time()), holds, freezer, lent)
        except OSError as exc:
            self.queue[bid] = job  # tried again on the next pass: nothing accepted is lost
            self._launch_failed(bid, exc)
            return False
        self._disk_hold = None
        return True

    def _launch_failed(self, bid: str, exc: OSError) -> None:
        """A launch that could not write its files: the queue waits, saying why, one log line a minute."""
        import errno

        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        self._disk_hold = f"Disk full: no space to start jobs under {self.root}" if full else None
        now = time.monotonic()
        if now - self._launch_logged >= 60:
            self._launch_logged = now
            log.warning("cannot write the files of attempt %s (%s); retried on each pass", bid, exc)

    def _launch(self, bid: str, job: QueuedJob, holds: tuple[Hold, ...], freezer: bool, lent: Any) -> None:
        adir = self.root / bid
        launch = json.loads((adir / "launch.json").read_text())
        # Every job may be frozen, whatever [policy.suspend] says now: switched on later (a policy reload), it
        # covers the jobs already running. A v1 freezer cgroup (one more cgroup move at the start, milliseconds)
        # only for those a trial may suspend now (`freezer`); the others' shepherds freeze them by signals.
        launch.update(suspendable=True, freezer_cgroup=freezer, gpu_apps=self.gpu_poll.file_for(holds))
        launch["lent"] = lent  # a trial on lent cores: its group (lending.py), read back after a restart
        need = job.shared_need
        device_memory = ledger_of(self._inventory.gpus, ()).memory.get(holds[0].index, 0) if holds else 0
        launch["env"].update(gpu_env(holds, need, device_memory, self.settings.section("local")))
        launch["gpu_holds"] = [[h.index, h.memory_bytes] for h in holds]
        # The shepherd ends a shared job whose processes use more device memory than it holds.
        launch["gpu_memory_limit"] = holds[0].memory_bytes if need is not None and holds else None
        write_json(adir / "launch.json", launch)
        self.running[bid] = Running(job, holds, pid=spawn_shepherd(adir), suspendable=True)
