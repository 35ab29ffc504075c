"""The attempt folder `<home>/local/<backend id>/`: what the gateway and the attempt's shepherd leave there.

launch.json (written at submit, completed at launch), shepherd.pid, started.json, result.json, cancel (a
flag file), suspend (the gateway asks the shepherd to freeze the job) and suspended.json (the shepherd's account
of it: backends/freezing.py). Everything a restarted gateway needs is read back from these files.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from frontdesk.backends.base import BackendStatus, JobState, Usage
from frontdesk.backends.freezing import SUSPEND_FILE, SUSPENDED_FILE
from frontdesk.backends.gpushare import Hold
from frontdesk.backends.runas import RunAs, own
from frontdesk.backends.shepherd import write_json
from frontdesk.procid import ProcId, parse

__all__ = ["AttemptFiles", "cancelled_result", "give_job_files", "holds_of", "lost_result"]

_SUSPENDED_REASON = "Suspended: a trial runs on its cores"

_OUTPUTS_KEPT = 4096
"""Attempts whose output paths are kept in memory (a bound: the cache is emptied when it is full)."""


class AttemptFiles:
    """The attempt folders under one root (`<home>/local`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._outputs: dict[str, tuple[Path, Path]] = {}
        """backend id -> (stdout, stderr) from launch.json, which never changes them: a job's end reads only
        result.json, not the whole launch file (the submitter's environment is most of it)."""

    def path(self, bid: str, name: str) -> Path:
        """One file of attempt `bid`."""
        return self.root / bid / name

    def exists(self, bid: str, name: str) -> bool:
        """Whether attempt `bid` has file `name`."""
        return self.path(bid, name).exists()

    def read(self, bid: str, name: str) -> dict[str, Any] | None:
        """A JSON file of the attempt, None when missing or unreadable."""
        try:
            data: dict[str, Any] = json.loads(self.path(bid, name).read_text())
            return data
        except (OSError, ValueError):
            return None

    def write_result(self, bid: str, result: dict[str, Any]) -> None:
        """The attempt's result.json (written by the gateway only for attempts no shepherd ended)."""
        write_json(self.path(bid, "result.json"), result)

    def write_cancelled(self, bid: str) -> None:
        """The result of an attempt cancelled before it ran."""
        self.write_result(bid, cancelled_result())

    def ask_suspend(self, bid: str, until: float, trial: str) -> None:
        """Ask attempt `bid`'s shepherd to freeze its job until `until` at the latest (for `trial`)."""
        write_json(self.path(bid, SUSPEND_FILE), {"until": until, "for": trial})

    def ask_resume(self, bid: str) -> None:
        """Withdraw the request: the shepherd thaws the job at its next sample."""
        try:
            self.path(bid, SUSPEND_FILE).unlink()
        except FileNotFoundError:
            pass

    def shepherd_pid(self, bid: str) -> ProcId | None:
        """The shepherd the attempt's shepherd.pid names (pid, start, boot; only a pid in an older file), None
        before it started."""
        try:
            with open(self.path(bid, "shepherd.pid"), encoding="ascii", errors="replace") as fh:
                return parse(fh.read(200))
        except OSError:
            return None

    def outputs(self, bid: str) -> tuple[Path, Path] | None:
        """The attempt's stdout and stderr paths (None for an unknown attempt)."""
        known = self._outputs.get(bid)
        if known is None:
            launch = self.read(bid, "launch.json")
            if launch is None:
                return None
            if len(self._outputs) >= _OUTPUTS_KEPT:
                self._outputs.clear()
            known = self._outputs[bid] = (Path(launch["stdout"]), Path(launch["stderr"]))
        return known

    def forget(self, bid: str) -> None:
        """Drop what is kept in memory about an attempt that is over (its files stay)."""
        self._outputs.pop(bid, None)

    def status(self, bid: str, running: bool) -> BackendStatus | None:
        """The state the files tell (ended, running, or waiting to start); None for an unknown attempt."""
        outputs = self.outputs(bid)
        if outputs is None:
            return None
        out, err = outputs
        result = self.read(bid, "result.json")
        if result is not None:
            return _ended(bid, result, out, err)
        started = self.read(bid, "started.json")
        if running or started is not None:
            paused = self.read(bid, SUSPENDED_FILE)  # absent unless a trial ever suspended it
            frozen = bool(paused and paused.get("frozen"))
            return BackendStatus(
                backend_id=bid,
                state=JobState.SUSPENDED if frozen else JobState.RUNNING,
                reason=_SUSPENDED_REASON if frozen else None,
                started_at=started.get("started_at") if started else None,
                stdout_path=out,
                stderr_path=err,
                node=os.uname().nodename,
            )
        return BackendStatus(backend_id=bid, state=JobState.PENDING, reason="Resources")


def _ended(bid: str, result: dict[str, Any], out: Path, err: Path) -> BackendStatus:
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
            suspended_s=_seconds(result.get("suspended_s")),
        ),
        reason=result.get("reason"),
        stdout_path=out,
        stderr_path=err,
        node=os.uname().nodename,
    )


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def cancelled_result() -> dict[str, Any]:
    """result.json of an attempt cancelled before it ran or whose shepherd died after a cancel."""
    return {"state": JobState.CANCELLED.value, "ended_at": time.time(), "reason": "cancelled"}


def lost_result() -> dict[str, Any]:
    """result.json of an attempt whose shepherd died without one (its processes fenced)."""
    return {
        "state": JobState.NODE_FAIL.value,
        "ended_at": time.time(),
        "reason": "the job's shepherd died without a result; the job's processes were killed",
        "fenced": True,
    }


def give_job_files(job_dir: Path, who: RunAs) -> None:
    """The attempt's files become the job user's (0600, a script 0700); its directories stay ours, 0700."""
    for d in (job_dir.parent, job_dir):
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(d, 0o700)
    for f in job_dir.iterdir():
        if f.is_file() and not f.is_symlink():
            own(f, who, 0o700 if f.name == "script" else 0o600)


def holds_of(launch: dict[str, Any]) -> tuple[Hold, ...]:
    """The devices a launched attempt holds (launch files from before shared GPUs: whole devices)."""
    if "gpu_holds" in launch:
        return tuple(Hold(int(i), int(m)) for i, m in launch["gpu_holds"] or ())
    return tuple(Hold(int(g)) for g in launch["env"].get("CUDA_VISIBLE_DEVICES", "").split(",") if g.isdigit())
