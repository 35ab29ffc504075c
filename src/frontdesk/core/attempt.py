"""One attempt of a job made ready for a backend: its folder, script, spec copy, environment and extras."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from frontdesk.backends.base import BackendJob
from frontdesk.config import Settings
from frontdesk.jobs.record import JobRecord
from frontdesk.spec.model import JobSpec

__all__ = ["backend_job", "job_dir"]


def job_dir(settings: Settings, job_id: int, attempt: int) -> Path:
    """The gateway's directory for one attempt (script, logs, provenance)."""
    return settings.jobs_dir / str(job_id) / f"attempt-{attempt}"


def backend_job(rec: JobRecord, settings: Settings) -> BackendJob:
    """Write the attempt's folder and describe the attempt to the backend (raises OSError/ValueError)."""
    spec = JobSpec.model_validate(rec.spec_data())
    context = rec.context_data()
    jdir = job_dir(settings, rec.id, rec.attempt)
    jdir.mkdir(parents=True, exist_ok=True)
    cwd = Path(context.get("cwd") or str(Path.home()))
    workdir = Path(spec.workdir) if spec.workdir else cwd
    if not workdir.is_absolute():
        workdir = cwd / workdir
    (jdir / "spec.json").write_text(rec.spec)
    res = spec.resources
    return BackendJob(
        job_id=rec.id,
        attempt=rec.attempt,
        name=spec.name or f"job{rec.id}",
        argv=_argv(spec, jdir),
        workdir=workdir,
        env=_env(rec, spec, context),
        job_dir=jdir,
        cpus=res.cpus,
        memory_bytes=res.memory,
        gpus=res.gpus,
        gpu_types=tuple(res.gpu.type) if res.gpu else (),
        gpu_memory_bytes=res.gpu.memory if res.gpu else None,
        gpu_share=res.gpu.share if res.gpu else None,
        walltime_seconds=res.walltime,
        partition=rec.partition,
        priority=rec.priority,
        qos=rec.qos,
        script_text=spec.script,
        extra=_extra(rec, spec, settings, workdir, jdir),
        uid=context.get("uid"),
        array_id=rec.array_id,
        array_index=rec.array_index,
    )


def _argv(spec: JobSpec, jdir: Path) -> list[str]:
    if spec.script is None:
        return spec.argv()
    script = jdir / "script"
    script.write_text(spec.script)
    script.chmod(0o700)
    return [str(script)] if spec.script.startswith("#!") else ["/bin/bash", str(script)]


def _env(rec: JobRecord, spec: JobSpec, context: dict[str, Any]) -> dict[str, str]:
    env = {
        **context.get("env", {}),
        **spec.env,
        "FRONTDESK_JOB_ID": str(rec.id),
        "FRONTDESK_ATTEMPT": str(rec.attempt),
    }
    if spec.name:
        env["FRONTDESK_JOB_NAME"] = spec.name
    if rec.array_id is not None:  # a task of an array (core/arrays.py); Slurm sets its own on a real array
        env["FRONTDESK_ARRAY_JOB_ID"] = str(rec.array_id)
        env["FRONTDESK_ARRAY_TASK_ID"] = env["SLURM_ARRAY_TASK_ID"] = str(rec.array_index)
    return env


def _extra(rec: JobRecord, spec: JobSpec, settings: Settings, workdir: Path, jdir: Path) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "policy": {
            "class": rec.job_class,
            "principal": rec.principal,
            "trial": spec.trial,
            "session": rec.session,
        }
    }
    if spec.slurm is not None:
        extra["slurm"] = spec.slurm  # the sbatch shim's options, for the Slurm backend
    if spec.resources.gpu is not None:
        extra["gpu"] = spec.resources.gpu  # every acceptable type and min_memory, for backends that place GPUs
    if settings.section("local").get("landlock"):
        # The write sandbox: the job's workdir, its own directory (logs) and temp dirs, plus site scratch.
        scratch = settings.section("local").get("landlock_writable", [])
        extra["landlock_writable"] = [
            str(workdir),
            str(jdir),
            "/tmp",
            "/var/tmp",
            "/dev/shm",
            *[str(p) for p in scratch],
        ]
    return extra
