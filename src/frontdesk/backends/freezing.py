"""Suspending a running job on the embedded backend: the cgroup freezer, else SIGSTOP/SIGCONT of its tree.

The gateway asks by writing `suspend` in the attempt's folder (JSON `{"until": <epoch s>, "for": <trial>}`;
one without a readable `until` is no request) and asks for the resume by removing it. The shepherd
(`Pause.tick`, at every sample) freezes or thaws the job, keeps `suspended.json` (frozen now, since when, seconds
suspended in all, how often, when it last resumed) and tells the gateway over the end-notice channel (a hint to
re-query: the files are the truth). Past `until` the shepherd thaws on its own and never obeys that request
again, so a gateway that died never leaves a job frozen: the trials it was frozen for are past their time
limits by then. Freezing uses, in order: the job's v2 cgroup (`cgroup.freeze`), a v1 `freezer`
cgroup the job joined at its start (`/sys/fs/cgroup/freezer/frontdesk/<tag>`; only jobs started while suspension
was on: joining costs the start a cgroup move), else SIGSTOP to its process group and every process of the
attempt (SIGCONT to thaw). Stdlib only: the shepherd imports it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["SUSPEND_FILE", "SUSPENDED_FILE", "Freezer", "Pause", "remove_freezer", "thaw_leftovers", "v1_freezer"]

SUSPEND_FILE = "suspend"
"""The gateway's request, in the attempt folder: present while the job should be frozen."""
SUSPENDED_FILE = "suspended.json"
"""The shepherd's account: what it did (the gateway reads the state and the totals from it)."""
SETTLE_SECONDS = 1.0
"""How long a freeze may take to reach every process before it is reported anyway."""

_V1 = Path("/sys/fs/cgroup/freezer")


def v1_freezer(tag: str) -> Path:
    """Where attempt `tag`'s v1 freezer cgroup lives."""
    return _V1 / "frontdesk" / tag


class Freezer:
    """Stops and continues one job's processes; `kind` says how (`cgroup-v2`, `cgroup-v1`, `signals`)."""

    def __init__(self, kind: str, path: Path | None) -> None:
        self.kind, self.path = kind, path
        self.made = path if kind == "cgroup-v1" else None
        """The v1 freezer cgroup this process made (removed at the end, also after a fall back to signals)."""

    @classmethod
    def create(cls, tag: str, v2_cgroup: Path | None, v1: bool = True) -> Freezer:
        """The best freezer this process can make for attempt `tag` (its v2 cgroup when it has one); `v1`: a v1
        freezer cgroup may be made (joining it costs the job's start one more cgroup move), else signals."""
        if v2_cgroup is not None and (v2_cgroup / "cgroup.freeze").exists():
            return cls("cgroup-v2", v2_cgroup)
        if v1 and os.environ.get("FRONTDESK_NO_CGROUP") != "1" and (_V1 / "cgroup.procs").exists():
            path = v1_freezer(tag)
            try:
                path.parent.mkdir(exist_ok=True)
                path.mkdir(exist_ok=True)
                return cls("cgroup-v1", path)
            except OSError:
                pass
        return cls("signals", None)

    def join(self) -> None:
        """Move the calling process into the v1 freezer cgroup (in the child, before exec); a failure only
        leaves the job outside it (`check` then falls back to signals), it never stops the job's start."""
        if self.kind == "cgroup-v1" and self.path is not None:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.procs").write_text("0")

    def check(self, pid: int) -> None:
        """After the start: signals instead of a v1 freezer cgroup the job's first process is not in."""
        if self.kind != "cgroup-v1" or self.path is None:
            return
        try:
            inside = str(pid) in (self.path / "cgroup.procs").read_text().split()
        except OSError:
            inside = False
        if not inside:
            self.kind = "signals"

    def freeze(self, pgid: int, tree: Callable[[], Iterable[int]]) -> None:
        """Stop every process of the job and wait (at most SETTLE_SECONDS) until they all are."""
        self._set(True, pgid, tree)
        deadline = time.monotonic() + SETTLE_SECONDS
        while not self._settled(tree) and time.monotonic() < deadline:
            time.sleep(0.01)

    def thaw(self, pgid: int, tree: Callable[[], Iterable[int]]) -> None:
        """Continue every process of the job."""
        self._set(False, pgid, tree)

    def _set(self, frozen: bool, pgid: int, tree: Callable[[], Iterable[int]]) -> None:
        try:
            if self.kind == "cgroup-v2" and self.path is not None:
                (self.path / "cgroup.freeze").write_text("1" if frozen else "0")
            elif self.kind == "cgroup-v1" and self.path is not None:
                (self.path / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
        except OSError:  # the cgroup went away: signals from now on (the shepherd never dies of a freeze)
            self.kind, self.path = "signals", None
        if self.kind == "signals":
            sig = signal.SIGSTOP if frozen else signal.SIGCONT
            with contextlib.suppress(OSError):
                os.killpg(pgid, sig)
            for pid in tree():
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)

    def _settled(self, tree: Callable[[], Iterable[int]]) -> bool:
        try:
            if self.kind == "cgroup-v1" and self.path is not None:
                return (self.path / "freezer.state").read_text().strip() == "FROZEN"
            if self.kind == "cgroup-v2" and self.path is not None:
                return "frozen 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return True
        return all(_state_letter(pid) in ("T", "t", "Z", None) for pid in tree())

    def remove(self, tries: int = 20) -> None:
        """Remove the v1 freezer cgroup once the job is gone (a member just reaped may hold it a moment: EBUSY)."""
        path = self.made
        if path is None:
            return
        for i in range(tries):
            try:
                path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if i + 1 < tries:
                    time.sleep(0.05)


def _state_letter(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode(errors="replace")
        return raw[raw.rfind(")") + 2 :].split()[0]
    except (OSError, IndexError):
        return None


def thaw_leftovers(tag: str) -> None:
    """Before a fence: thaw the freezer cgroup a dead shepherd may have left frozen (a frozen process does not
    die; a stopped one does, so the SIGSTOP fallback needs nothing here), then remove it once empty."""
    path = v1_freezer(tag)
    with contextlib.suppress(OSError):
        (path / "freezer.state").write_text("THAWED")


def remove_freezer(tag: str) -> None:
    """Remove attempt `tag`'s v1 freezer cgroup (after a fence: nothing of the attempt is left in it)."""
    with contextlib.suppress(OSError):
        v1_freezer(tag).rmdir()


def _requested_until(job_dir: Path) -> float | None:
    """Until when the gateway asks the job to stay frozen; None without a (readable) request."""
    try:
        data = json.loads((job_dir / SUSPEND_FILE).read_text())
    except (OSError, ValueError):
        return None
    until = data.get("until") if isinstance(data, dict) else None
    if isinstance(until, int | float) and not isinstance(until, bool) and math.isfinite(until):
        return float(until)
    return None


class Pause:
    """The shepherd's side: follows the gateway's request at each sample and accounts the time frozen."""

    def __init__(self, job_dir: Path, freezer: Freezer, told: Callable[[], None], bound_s: float) -> None:
        self.job_dir, self.freezer, self.told = job_dir, freezer, told
        self.bound_s = bound_s
        """The longest one suspension lasts, whatever the request says (a last resort against a bad `until`)."""
        self.served: float | None = None
        """The `until` of the last request that ended (a thaw past it): never obeyed again."""
        self.since: float | None = None
        self.total = 0.0
        self.count = 0
        self.resumed_at: float | None = None

    @property
    def frozen(self) -> bool:
        """Whether the job is frozen now."""
        return self.since is not None

    def suspended_s(self, now: float) -> float:
        """Seconds frozen in all, the current suspension included."""
        return self.total + (now - self.since if self.since is not None else 0.0)

    def tick(self, now: float, ending: bool, pgid: int, tree: Callable[[], Iterable[int]]) -> None:
        """Freeze or thaw as the request says (always thaw once the job is being ended)."""
        want = False
        until = None if ending else _requested_until(self.job_dir)
        if until is not None and until != self.served:
            start = self.since if self.since is not None else now
            want = now < min(until, start + self.bound_s)
            if not want:
                self.served = until  # over: this request never freezes the job again
        if want and self.since is None:
            self.freezer.freeze(pgid, tree)
            self.since, self.count = now, self.count + 1
            self._account()
        elif not want and self.since is not None:
            self.freezer.thaw(pgid, tree)
            self.total += now - self.since
            self.since, self.resumed_at = None, now
            self._account()

    def _account(self) -> None:
        data = {"frozen": self.frozen, "since": self.since, "suspended_s": self.total, "count": self.count}
        data["resumed_at"] = self.resumed_at
        tmp = self.job_dir / (SUSPENDED_FILE + ".tmp")
        with contextlib.suppress(OSError):  # a full disk: the state is then told by the next change
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(data))
            os.replace(tmp, self.job_dir / SUSPENDED_FILE)
        self.told()

    def result(self) -> dict[str, Any]:
        """The result's fields: seconds suspended in all and how often (none for a job never suspended)."""
        if not self.count:
            return {}
        return {"suspended_s": round(self.total, 3), "suspensions": self.count}
