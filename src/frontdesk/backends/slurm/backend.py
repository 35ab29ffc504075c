"""SlurmBackend: submit with sbatch, cancel with scancel, and ONE `scontrol -o show job` per refresh.

Every status question (the gateway's tick for all watched ids, a push re-query, the polling shield's
cached view) is answered from one `JobTable`: a single-flight snapshot of every job the controller
holds, refreshed by one controller RPC (REQUEST_JOB_INFO) no matter how many ids or callers ask.
Jobs the controller has forgotten (older than MinJobAge) come from `sacct` where the site keeps
accounting, else from the usage file the batch script leaves in the attempt's job directory.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from frontdesk.backends.base import TERMINAL_STATES, BackendJob, BackendStatus, Inventory, JobState, PushHint, Usage
from frontdesk.backends.runas import for_job
from frontdesk.backends.slurm import arrays, launches, parse, render
from frontdesk.backends.slurm.array_submit import submit_array
from frontdesk.backends.slurm.config import SlurmConfig, notify_dir_from
from frontdesk.backends.slurm.options import OptionError, validate_passthrough
from frontdesk.backends.slurm.placement import GpuPlacement, NoGpuNode, placement_for, shards_per_gpu
from frontdesk.backends.slurm.push import PushIntake
from frontdesk.backends.slurm.recovery import lookup, sbatch
from frontdesk.backends.slurm.runner import JobTable, Runner
from frontdesk.backends.slurm.sweep import Ended, Settled, sweep
from frontdesk.errors import BackendError
from frontdesk.spec.model import SlurmOptions

__all__ = ["JobTable", "SlurmBackend", "SlurmConfig", "notify_dir_from"]

log = logging.getLogger("frontdesk.backends.slurm")


class SlurmBackend:
    """The Backend Protocol on a Slurm cluster (tested against the lab: scripts/slurm-lab)."""

    name = "slurm"

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.config = SlurmConfig.from_settings(settings)
        self._run = Runner(self.config)
        self.runner = self._run
        self._nice_shift = 5000 if os.geteuid() == 0 else 0
        """Negative nice needs privilege: a root gateway centres the policy's range on 0."""
        self.table = JobTable(self._run)
        self._dirs: dict[str, Path] = {}
        self._inventory = Inventory(cpus=0, memory_bytes=0)
        self._shards = 0
        """GPU shards per GPU as the nodes declare them (read with the inventory)."""
        self._accounting = bool(self.config.accounting)
        self._push: PushHint | None = None
        self._pushes = PushIntake(settings, self.config)
        """EpilogSlurmctld's job ends: the facility gateway's subscription, else a notify_dir registration."""
        self._chasing: dict[str, int] = {}
        self._cancelled: set[str] = set()
        """Task ids cancelled while pending: Slurm forgets such a task at once, so its end is known here only."""

    # -- life cycle ---------------------------------------------------------------------------
    async def start(self, push: PushHint) -> None:
        """Check the controller answers, learn the inventory, register for EpilogSlurmctld pushes."""
        self._push = push
        try:
            await self._run(["scontrol", "ping"])
        except BackendError as exc:
            raise BackendError(f"no Slurm controller answers: {exc.message}") from None
        self._inventory = await asyncio.to_thread(self._read_inventory)
        if self.config.accounting is None:
            probe = await self._run(["sacct", "-n", "-X", "-j", "1", "--format=JobID"], check=False)
            self._accounting = probe.returncode == 0
        self._pushes.start(push)

    async def stop(self) -> None:
        """Unregister from pushes; Slurm jobs keep running and are found again on restart."""
        await self._pushes.stop()

    # -- jobs ---------------------------------------------------------------------------------
    async def submit(self, job: BackendJob) -> str:
        """Render and keep the script in job_dir, then `sbatch --parsable` it with the job's environment."""
        given = job.extra.get("slurm")
        if isinstance(given, SlurmOptions):
            try:
                validate_passthrough(given.options)
            except OptionError as exc:
                raise BackendError(f"sbatch options: {exc}") from None
            if job.attempt == 1 and given.submit_by and time.time() > given.submit_by:
                raise BackendError("the submitter gave up waiting before the job reached sbatch; not submitted")
        who = for_job(job.uid, job.extra.get("policy", {}).get("principal"))  # BackendError if we may not
        text = render.render_script(
            job,
            default_partition=self.config.partition,
            extra_directives=self.config.directives,
            gpu=self._gpu_placement(job),
            nice_shift=self._nice_shift,
            foreign=who.foreign,
        )
        script = job.job_dir / render.SCRIPT_FILE

        def write() -> None:
            job.job_dir.mkdir(parents=True, exist_ok=True)
            script.write_text(text)

        await asyncio.to_thread(write)
        home = Path(self.settings.home)
        launch = await asyncio.to_thread(launches.begin, home, job.key, self._tag(job), time.time())
        options, env = render.command_line(job, launch.tag), self._job_env(job)
        # a root gateway runs sbatch AS the submitter (Slurm checks them, not root), the script on its stdin
        argv = render.sbatch_argv(None if who.foreign else script, options=options)
        cwd = str(job.workdir if who.foreign else job.job_dir)
        stdin = text if who.foreign else None
        backend_id = await sbatch(self, job.key, launch, argv, cwd, env, who, stdin)  # kept if we die
        self._dirs[backend_id] = job.job_dir
        await asyncio.to_thread(self._remember, backend_id, job.job_dir)
        return backend_id

    async def submit_array(self, jobs: Sequence[BackendJob], max_running: int | None) -> list[str]:
        """ONE `sbatch --array` for many attempts (tasks may differ in command and environment); the Slurm
        id of each task, `<jobid>_<index>`, in order (see array_submit)."""
        return await submit_array(self, jobs, max_running)

    def _gpu_placement(self, job: BackendJob) -> GpuPlacement | None:
        try:
            shards = self.config.shards_per_gpu or self._shards
            return placement_for(job, self._inventory, self.config.partition, shards)
        except NoGpuNode as exc:
            raise BackendError(str(exc)) from None

    def _tag(self, job: BackendJob) -> str:
        """`fd-N.A@<gateway>`: the attempt's key plus which gateway's (its home) for lookup after a crash."""
        return f"{job.key}@{self._tag_suffix()}"

    def _tag_suffix(self) -> str:
        return hashlib.sha1(str(self.settings.home).encode()).hexdigest()[:10]

    def _job_env(self, job: BackendJob) -> dict[str, str]:
        """sbatch's environment = the job's (Slurm exports it: --export=ALL), never the gateway's own."""
        return self._env_for(job.env)

    def _env_for(self, job_env: Mapping[str, str]) -> dict[str, str]:
        """sbatch's input variables (SBATCH_*) and an outer job's SLURM_* would change what sbatch does, so
        they are left out; SLURM_CONF names this backend's cluster."""
        env = {k: v for k, v in job_env.items() if not k.startswith(("SBATCH_", "SLURM_"))}
        conf = self.config.conf or os.environ.get("SLURM_CONF")
        if conf:
            env["SLURM_CONF"] = conf
        return env

    @property
    def _ids_dir(self) -> Path:
        return Path(self.settings.home) / "slurm-ids"

    def _remember(self, backend_id: str, job_dir: Path) -> None:
        """Slurm id → job dir on disk: a restarted gateway still finds the usage file of a job that
        the controller has forgotten (MinJobAge) on a site without accounting."""
        try:
            self._ids_dir.mkdir(parents=True, exist_ok=True)
            (self._ids_dir / backend_id).write_text(str(job_dir))
        except OSError as exc:
            log.warning("cannot remember the job dir of Slurm job %s: %s", backend_id, exc)

    def _known_dir(self, backend_id: str) -> Path | None:
        if not _slurm_id(backend_id):
            return None
        if backend_id in self._dirs:
            return self._dirs[backend_id]
        try:
            path = Path((self._ids_dir / backend_id).read_text())
        except (OSError, ValueError):
            return None
        self._dirs[backend_id] = path
        return path

    async def cancel(self, backend_id: str) -> None:
        """`scancel` the job, one array task (`844_3`) or a whole array (Slurm signals every process of every step)."""
        await self._run(["scancel", backend_id])
        if arrays.split_task_id(backend_id) is not None:
            self._cancelled.add(backend_id)
            await asyncio.to_thread(self._mark_cancelled, backend_id)

    def _mark_cancelled(self, backend_id: str) -> None:
        """On disk too: a gateway restarted before it saw the end still knows the forgotten task was cancelled."""
        try:
            self._ids_dir.mkdir(parents=True, exist_ok=True)
            (self._ids_dir / f"{backend_id}.cancelled").touch()
        except OSError as exc:
            log.warning("cannot record the cancel of Slurm task %s: %s", backend_id, exc)

    def _was_cancelled(self, backend_id: str) -> bool:
        if backend_id in self._cancelled:
            return True
        return arrays.split_task_id(backend_id) is not None and (self._ids_dir / f"{backend_id}.cancelled").exists()

    async def set_priority(self, backend_id: str, priority: int) -> None:
        """Move a pending job within its partition: the policy's priority as Slurm's `Nice` (backfill stays Slurm's)."""
        nice = render.nice_value(priority, self._nice_shift)
        await self._run(["scontrol", "update", f"JobId={backend_id}", f"Nice={nice}"])

    async def hold(self, backend_id: str, hold: bool = True) -> None:
        """`scontrol hold` / `release` a pending job (e.g. a borrower reclaimed, a node drained)."""
        await self._run(["scontrol", "hold" if hold else "release", backend_id])

    async def query(self, backend_ids: Sequence[str]) -> dict[str, BackendStatus]:
        """States of many jobs from ONE fresh controller query (plus one sacct for forgotten ids)."""
        if not backend_ids:
            return {}
        records, _ = await self.table.fetch(0.05)  # pushes arriving together share one query
        out = await self._statuses(records, backend_ids)
        self._chase_completing(out)
        return out

    def _chase_completing(self, statuses: Mapping[str, BackendStatus]) -> None:
        """Re-push jobs seen COMPLETING (EpilogSlurmctld pushes while the job is still in it), backing off:
        0.1, 0.2 ... 12.8 s, then the tick: a cancel storm costs a few queries per job, not fifty."""
        for bid, st in statuses.items():
            if st.raw_state != "COMPLETING":
                self._chasing.pop(bid, None)
                continue
            tries = self._chasing.get(bid, 0)
            if tries >= 8 or self._push is None:
                continue
            self._chasing[bid] = tries + 1
            asyncio.get_running_loop().call_later(0.1 * 2**tries, self._push, [bid])

    async def _statuses(
        self, records: Mapping[str, parse.JobRecord], backend_ids: Sequence[str]
    ) -> dict[str, BackendStatus]:
        found = self._find(records, backend_ids)
        out = await asyncio.to_thread(self._with_usage, found)
        missing = [bid for bid in backend_ids if bid not in out]
        if missing and self._accounting:
            out.update(await self._from_sacct(missing))
            missing = [bid for bid in missing if bid not in out]
        if missing:
            out.update(await asyncio.to_thread(self._from_usage_files, missing))
        for bid in [b for b in backend_ids if b not in out and self._was_cancelled(b)]:
            out[bid] = BackendStatus(backend_id=bid, state=JobState.CANCELLED, reason="cancelled while pending")
        return out

    @staticmethod
    def _find(
        records: Mapping[str, parse.JobRecord], backend_ids: Sequence[str]
    ) -> list[tuple[str, Mapping[str, str]]]:
        """(id, record) of each id in the snapshot: a plain job by JobId, an array task (`844_3`) by its own
        record or the array's fold of pending tasks."""
        found: list[tuple[str, Mapping[str, str]]] = []
        index: dict[str, Mapping[str, str]] | None = None
        for bid in backend_ids:
            if "_" not in bid:
                if bid in records:
                    found.append((bid, records[bid]))
                continue
            index = arrays.task_index(records.values()) if index is None else index
            record = arrays.find_task(bid, records, index)
            if record is not None:
                found.append((bid, record))
        return found

    def _with_usage(self, found: Sequence[tuple[str, Mapping[str, str]]]) -> dict[str, BackendStatus]:
        out = {}
        for bid, record in found:
            usage = None
            if parse.parse_state(record.get("JobState", "")) in TERMINAL_STATES:
                usage = self._read_usage(self._known_dir(bid))[0]  # ours, never where StdOut= (the user's -o) says
            status = parse.record_to_status(record, usage)
            if status is None:
                log.warning("job %s: unknown Slurm state %r", bid, record.get("JobState"))
                continue
            out[bid] = self._as_task(bid, status) if "_" in bid else status
        return out

    def _as_task(self, bid: str, status: BackendStatus) -> BackendStatus:
        """A task's status under its own id, its output where its job dir is (Slurm names the array's links)."""
        job_dir = self._known_dir(bid)
        paths: dict[str, Path | None] = {}
        if job_dir is not None and status.stdout_path and status.stdout_path.parent.name == "array":
            paths = {"stdout_path": job_dir / render.STDOUT_FILE, "stderr_path": job_dir / render.STDERR_FILE}
        return dataclasses.replace(status, backend_id=bid, **paths)  # type: ignore[arg-type]

    @staticmethod
    def _read_usage(job_dir: Path | None) -> tuple[Usage | None, int | None, float | None]:
        if job_dir is None:
            return None, None, None
        try:
            text = (job_dir / render.USAGE_FILE).read_text()
        except OSError:
            return None, None, None
        return parse.parse_usage_file(text)

    def _from_usage_files(self, missing: Sequence[str]) -> dict[str, BackendStatus]:
        out = {}
        for bid in missing:
            job_dir = self._known_dir(bid)
            usage, rc, ended = self._read_usage(job_dir)
            if job_dir is None or rc is None:
                continue
            state = JobState.COMPLETED if rc == 0 else JobState.FAILED
            out[bid] = BackendStatus(
                backend_id=bid,
                state=state,
                exit_code=rc if rc < 128 else None,
                signal=rc - 128 if rc > 128 else None,
                ended_at=ended,
                usage=usage,
                stdout_path=job_dir / render.STDOUT_FILE,
                stderr_path=job_dir / render.STDERR_FILE,
                raw_state="(usage file)",
            )
        return out

    async def _from_sacct(self, ids: Sequence[str]) -> dict[str, BackendStatus]:
        result = await self._run(
            [
                "sacct",
                "--parsable2",
                "--noheader",
                "--duplicates",
                "-j",
                ",".join(ids),
                "--format=" + ",".join(parse.SACCT_FIELDS),
            ],
            check=False,
        )
        if result.returncode != 0:
            return {}
        statuses = parse.sacct_to_statuses(parse.parse_sacct(result.stdout))
        asked = set(ids)
        out = {}
        for bid, st in statuses.items():
            if bid not in asked:  # only the jobs asked about: no other row is taken for anything
                continue
            job_dir = self._dirs.get(bid)
            if job_dir is not None:
                st = BackendStatus(
                    **{
                        **st.__dict__,
                        "stdout_path": job_dir / render.STDOUT_FILE,
                        "stderr_path": job_dir / render.STDERR_FILE,
                    }
                )
            out[bid] = st
        return out

    async def lookup(self, keys: Sequence[str], owners: Mapping[str, int] | None = None) -> dict[str, str]:
        """Slurm ids of attempts from the id sbatch wrote for each (never a name, comment or path a submitter
        writes), of the uid each attempt runs as (`owners`); see recovery."""
        return await lookup(self, keys, owners)

    def sweep_records(self, settled: Settled, ended: Ended) -> tuple[int, int]:
        """One bounded pass deleting crash-recovery files nothing needs any more (sweep.py); for a worker thread."""
        swept = sweep(Path(self.settings.home), settled, ended)
        return swept.examined, swept.removed

    async def view(self, max_age: float | None = None) -> tuple[dict[str, parse.JobRecord], float]:
        """Every job the controller holds, at most `max_age` (default refresh_seconds) old."""
        return await self.table.fetch(self.config.refresh_seconds if max_age is None else max_age)

    def inventory(self) -> Inventory:
        """Nodes, GPUs by type and partitions as read at start."""
        return self._inventory

    def _read_inventory(self) -> Inventory:
        nodes = self._run.sync(["scontrol", "-o", "show", "node"], check=False).stdout
        parts = self._run.sync(["scontrol", "-o", "show", "partition"], check=False).stdout
        rows = parse.parse_scontrol_records(nodes, "NodeName")
        self._shards = shards_per_gpu(rows)  # [slurm] shards_per_gpu, when set, wins
        return parse.inventory_from_records(rows, parse.parse_scontrol_records(parts, "PartitionName"))


def _slurm_id(backend_id: str) -> bool:
    """A plain Slurm job id or an array task id: safe as a file name under slurm-ids/."""
    return backend_id.isdigit() or arrays.split_task_id(backend_id) is not None
