"""The embedded backend: runs jobs as local processes, each under a shepherd, with real resource accounting.

Queue, resources and GPU assignment live here; each started attempt gets a detached shepherd
(backends/shepherd.py) that enforces walltime and memory and leaves result.json behind. All state is in
`<home>/local/<backend id>/`, so a restarted gateway picks up queued, running and finished attempts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from frontdesk.backends.base import BackendJob, BackendStatus, Inventory, JobState, PushHint, Usage
from frontdesk.backends.runas import RunAs, for_job, own
from frontdesk.backends.shepherd import write_json
from frontdesk.backends.tracking import fence, state_id
from frontdesk.config import Settings
from frontdesk.errors import BackendError
from frontdesk.jobenv import login_env, shepherd_env

__all__ = ["FreeResources", "LocalBackend", "QueuedJob", "Scheduler", "detect_gpus", "greedy_pick"]

log = logging.getLogger("frontdesk.local")


@dataclass(frozen=True)
class QueuedJob:
    """A queued attempt as a scheduler sees it."""

    backend_id: str
    job_id: int
    cpus: int
    memory_bytes: int
    gpus: int
    gpu_types: tuple[str, ...]
    walltime_seconds: int | None
    priority: int
    queued_at: float
    partition: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    """Set once the attempt runs (schedulers estimate its end from it)."""


@dataclass(frozen=True)
class FreeResources:
    """What is free now, and what is held by whom."""

    cpus: int
    memory_bytes: int
    gpus: tuple[int, ...]
    gpu_models: dict[int, str]
    running: tuple[QueuedJob, ...] = ()
    total_cpus: int = 0
    total_memory_bytes: int = 0


Scheduler = Callable[[list[QueuedJob], FreeResources, float], list[str]]
"""A pure function: which queued attempts to start now."""


def _fits(job: QueuedJob, cpus: int, mem: int, gpus: Sequence[int], models: dict[int, str]) -> bool:
    usable = [g for g in gpus if not job.gpu_types or models.get(g, "").lower() in job.gpu_types]
    return job.cpus <= cpus and job.memory_bytes <= mem and job.gpus <= len(usable)


def greedy_pick(queued: list[QueuedJob], free: FreeResources, now: float) -> list[str]:
    """The default order: priority, then submission; start each attempt that fits (first fit)."""
    cpus, mem, gpus = free.cpus, free.memory_bytes, list(free.gpus)
    picked = []
    for job in sorted(queued, key=lambda j: (-j.priority, j.queued_at, j.job_id)):
        if _fits(job, cpus, mem, gpus, free.gpu_models):
            picked.append(job.backend_id)
            cpus -= job.cpus
            mem -= job.memory_bytes
            usable = [g for g in gpus if not job.gpu_types or free.gpu_models.get(g, "").lower() in job.gpu_types]
            for g in usable[: job.gpus]:
                gpus.remove(g)
    return picked


def detect_gpus() -> list[dict[str, Any]]:
    """GPUs seen by nvidia-smi (index, model, memory), or none."""
    from frontdesk import proc
    from frontdesk.errors import FrontdeskError

    try:
        out = proc.run(
            ["nvidia-smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"], timeout=10
        ).stdout
    except FrontdeskError:
        return []
    gpus = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit():
            gpus.append({"index": int(parts[0]), "model": parts[1], "memory_bytes": int(float(parts[2])) * 1024**2})
    return gpus


def _mem_total() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class _Running:
    job: QueuedJob
    gpus: tuple[int, ...]
    pid: int


def _exited(pid: int) -> bool:
    """Whether a shepherd has ended (reaping it when it is our child)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done != 0
    except ChildProcessError:  # not our child (adopted after a restart)
        return not _alive(pid)


class LocalBackend:
    """Runs attempts on this machine; see the module docstring."""

    name = "local"

    def __init__(self, settings: Settings) -> None:
        from frontdesk.spec.units import parse_memory

        self.settings = settings
        self.root = settings.home / "local"
        self.root.mkdir(parents=True, exist_ok=True)
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
        mem = parse_memory(settings.local_memory) if settings.local_memory else _mem_total()
        self._inventory = Inventory(cpus=settings.local_cpus or os.cpu_count() or 1, memory_bytes=mem, gpus=tuple(gpus))
        self.scheduler: Scheduler = greedy_pick
        self.hold_reason: Callable[[], str | None] = lambda: None
        """Why nothing starts although resources are free (a plug-in's drain); None when nothing holds."""
        self._disk_hold: str | None = None
        self._launch_logged = 0.0
        self.queue: dict[str, QueuedJob] = {}
        self.running: dict[str, _Running] = {}
        self._push: PushHint = lambda ids: None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- Protocol ---------------------------------------------------------------------------------
    def inventory(self) -> Inventory:
        """CPUs, memory and GPUs of this machine (or as declared in [local])."""
        return self._inventory

    async def start(self, push: PushHint) -> None:
        """Recover attempts left by an earlier gateway, then run the scheduling loop."""
        self._push = push
        self._recover()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Stop scheduling; running shepherds carry on without the gateway."""
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def submit(self, job: BackendJob) -> str:
        """Write the attempt's launch file and queue it."""
        bid = f"{job.job_id}.{job.attempt}"
        never = self._never_fits(job)
        if never:
            raise BackendError(f"the job can never run here: {never}")
        adir = self.root / bid
        adir.mkdir(mode=0o700, parents=True, exist_ok=True)
        who = for_job(job.uid, job.extra.get("policy", {}).get("principal"))
        _give_job_files(job.job_dir, who)
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
            self._write_result(backend_id, {"state": "CANCELLED", "ended_at": time.time(), "reason": "cancelled"})
            self._push([backend_id])
            return
        run = self.running.get(backend_id)
        (self.root / backend_id / "cancel").touch(mode=0o600)
        if run:
            try:
                os.kill(run.pid, signal.SIGTERM)
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

    async def lookup(self, keys: Sequence[str]) -> dict[str, str]:
        """Backend ids for `fd-<job>.<attempt>` keys that reached this backend."""
        found = {}
        for key in keys:
            bid = key.removeprefix("fd-")
            if (self.root / bid / "launch.json").exists():
                found[key] = bid
        return found

    # -- internals --------------------------------------------------------------------------------
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
        )

    def _write_result(self, bid: str, result: dict[str, Any]) -> None:
        write_json(self.root / bid / "result.json", result)

    def _never_fits(self, job: BackendJob) -> str | None:
        """Why a job can never fit this host (so it is refused, never PENDING forever), or None."""
        from frontdesk.spec.units import format_bytes

        inv = self._inventory
        if job.cpus > inv.cpus:
            return f"it asks for {job.cpus} CPUs and this host has {inv.cpus}"
        if job.memory_bytes and job.memory_bytes > inv.memory_bytes:
            have = format_bytes(inv.memory_bytes)
            return f"it asks for {format_bytes(job.memory_bytes)} of memory and this host has {have}"
        models = [str(g.get("model", "")).lower() for g in inv.gpus]
        usable = [m for m in models if not job.gpu_types or m in {t.lower() for t in job.gpu_types}]
        if job.gpus > len(usable):
            kind = f" of type {'/'.join(job.gpu_types)}" if job.gpu_types else ""
            return f"it asks for {job.gpus} GPUs{kind} and this host has {len(usable)}"
        return None

    def _fence(self, bid: str, timeout: float = 10.0) -> bool:
        """Kill what is left of an attempt whose shepherd is gone; True once nothing of it runs."""
        launch = self._read(bid, "launch.json") or {}
        started = self._read(bid, "started.json") or {}
        pid = started.get("pid")
        return fence(launch, int(pid) if isinstance(pid, int) else None, timeout=timeout)

    def _write_lost(self, bid: str) -> bool:
        """Record an attempt whose shepherd died without leaving a result, once its processes are fenced
        (killed and confirmed gone): only then may the gateway call it lost or run it again."""
        if not self._fence(bid):
            log.warning("attempt %s: its shepherd died and some of its processes survive a kill; retrying", bid)
            return False
        if (self.root / bid / "result.json").exists():
            return True  # the shepherd wrote it after all
        lost = {
            "state": "NODE_FAIL",
            "ended_at": time.time(),
            "reason": "the job's shepherd died without a result; the job's processes were killed",
            "fenced": True,
        }
        if (self.root / bid / "cancel").exists():
            lost = {"state": "CANCELLED", "ended_at": time.time(), "reason": "cancelled"}
        try:
            self._write_result(bid, lost)
        except OSError as exc:  # a full disk: tried again on the next pass
            self._launch_failed(bid, exc)
            return False
        return True

    def _read(self, bid: str, name: str) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads((self.root / bid / name).read_text())
            return data
        except (OSError, ValueError):
            return None

    def _status(self, bid: str) -> BackendStatus | None:
        if bid in self.queue:
            reason = self._disk_hold or self.hold_reason() or "Resources"
            return BackendStatus(backend_id=bid, state=JobState.PENDING, reason=reason)
        launch = self._read(bid, "launch.json")
        if launch is None:
            return None
        out, err = Path(launch["stdout"]), Path(launch["stderr"])
        result = self._read(bid, "result.json")
        if result is not None:
            return BackendStatus(
                backend_id=bid,
                state=JobState(result["state"]),
                exit_code=result.get("exit_code"),
                signal=result.get("signal"),
                started_at=result.get("started_at"),
                ended_at=result.get("ended_at"),
                usage=Usage(
                    cpu_seconds=result.get("cpu_seconds"),
                    peak_rss_bytes=result.get("peak_rss_bytes"),
                    gpu_util_percent=result.get("gpu_util_percent"),
                    gpu_mem_peak_bytes=result.get("gpu_mem_peak_bytes"),
                ),
                reason=result.get("reason"),
                stdout_path=out,
                stderr_path=err,
                node=os.uname().nodename,
            )
        started = self._read(bid, "started.json")
        if bid in self.running or started is not None:
            return BackendStatus(
                backend_id=bid,
                state=JobState.RUNNING,
                started_at=started.get("started_at") if started else None,
                stdout_path=out,
                stderr_path=err,
                node=os.uname().nodename,
            )
        return BackendStatus(backend_id=bid, state=JobState.PENDING, reason="Resources")

    def _recover(self) -> None:
        for adir in sorted(self.root.iterdir()):
            bid = adir.name
            launch = self._read(bid, "launch.json")
            if launch is None or (adir / "result.json").exists():
                continue
            queued = QueuedJob(**{**launch["queued"], "gpu_types": tuple(launch["queued"]["gpu_types"])})
            pid = self._shepherd_pid(bid)
            if pid is None:
                self.queue[bid] = queued
            elif _alive(pid):
                gpus = tuple(int(g) for g in launch["env"].get("CUDA_VISIBLE_DEVICES", "").split(",") if g.isdigit())
                started = self._read(bid, "started.json") or {}
                self.running[bid] = _Running(replace(queued, started_at=started.get("started_at")), gpus, pid)
            elif not self._write_lost(bid):
                self.running[bid] = _Running(queued, (), pid)  # not fenced yet: _reap tries again

    def _shepherd_pid(self, bid: str) -> int | None:
        try:
            return int((self.root / bid / "shepherd.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def _free(self) -> FreeResources:
        inv = self._inventory
        held_gpus = {g for r in self.running.values() for g in r.gpus}
        models = {int(g["index"]): str(g.get("model", "")) for g in inv.gpus}
        return FreeResources(
            cpus=inv.cpus - sum(r.job.cpus for r in self.running.values()),
            memory_bytes=inv.memory_bytes - sum(r.job.memory_bytes for r in self.running.values()),
            gpus=tuple(i for i in sorted(models) if i not in held_gpus),
            gpu_models=models,
            running=tuple(r.job for r in self.running.values()),
            total_cpus=inv.cpus,
            total_memory_bytes=inv.memory_bytes,
        )

    async def _loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=0.2)
            except TimeoutError:
                pass
            self._wake.clear()
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
            if not _exited(run.pid):
                continue
            if not (self.root / bid / "result.json").exists():
                owner = self._shepherd_pid(bid)
                if owner and owner != run.pid and _alive(owner):
                    run.pid = owner  # a shepherd from before a restart owns this attempt: follow it
                    continue
                if not self._write_lost(bid):
                    continue
            del self.running[bid]
            ended.append(bid)
        return ended

    def _schedule(self) -> list[str]:
        if not self.queue:
            return []
        free = self._free()
        picks = self.scheduler(list(self.queue.values()), free, time.time())
        started = []
        gpus_free = list(free.gpus)
        for bid in picks:
            job = self.queue.pop(bid, None)
            if job is None:
                continue
            usable = [g for g in gpus_free if not job.gpu_types or free.gpu_models.get(g, "").lower() in job.gpu_types]
            gpus = tuple(usable[: job.gpus])
            for g in gpus:
                gpus_free.remove(g)
            try:
                self._launch(bid, replace(job, started_at=time.time()), gpus)
            except OSError as exc:
                self.queue[bid] = job  # tried again on the next pass: nothing accepted is lost
                self._launch_failed(bid, exc)
                break
            self._disk_hold = None
            started.append(bid)
        return started

    def _launch_failed(self, bid: str, exc: OSError) -> None:
        """A launch that could not write its files: the queue waits, saying why, one log line a minute."""
        import errno

        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        self._disk_hold = f"Disk full: no space to start jobs under {self.root}" if full else None
        now = time.monotonic()
        if now - self._launch_logged >= 60:
            self._launch_logged = now
            log.warning("cannot write the files of attempt %s (%s); retried on each pass", bid, exc)

    def _launch(self, bid: str, job: QueuedJob, gpus: tuple[int, ...]) -> None:
        adir = self.root / bid
        launch = json.loads((adir / "launch.json").read_text())
        launch["env"]["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
        write_json(adir / "launch.json", launch)
        log = os.open(adir / "shepherd.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            # posix_spawn (vfork) keeps launching cheap even when the gateway process is large.
            pid = os.posix_spawn(
                sys.executable,
                # -P: never the gateway's working directory on the import path (the shepherd may run as root).
                [sys.executable, "-P", "-m", "frontdesk.backends.shepherd", str(adir)],
                shepherd_env(),
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, log, 1),
                    (os.POSIX_SPAWN_DUP2, log, 2),
                ],
                setsid=True,
            )
        finally:
            os.close(log)
        self.running[bid] = _Running(job, gpus, pid=pid)


_OUTPUT_MAX = "1G"
"""Default cap on each of a job's output files ([local] output_max_bytes; 0 for none)."""


def _give_job_files(job_dir: Path, who: RunAs) -> None:
    """The attempt's files become the job user's (0600, a script 0700); its directories stay ours, 0700."""
    for d in (job_dir.parent, job_dir):
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(d, 0o700)
    for f in job_dir.iterdir():
        if f.is_file() and not f.is_symlink():
            own(f, who, 0o700 if f.name == "script" else 0o600)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
