"""An attempt whose shepherd died: what is left of it is fenced (thawed first, killed, confirmed gone), and only
then is it recorded, as cancelled when a cancel was asked, else lost (NODE_FAIL), so that the gateway may call
it ended or run it again. Nothing of a running job is ever recorded as over while a process of it may run.
"""

from __future__ import annotations

from frontdesk.backends.freezing import remove_freezer, thaw_leftovers
from frontdesk.backends.local.files import AttemptFiles, lost_result
from frontdesk.backends.tracking import fence
from frontdesk.procid import boot_id

__all__ = ["fence_attempt", "record_lost"]


def fence_attempt(files: AttemptFiles, bid: str, timeout: float = 10.0) -> bool:
    """Kill what is left of attempt `bid`; True once nothing of it runs (its freezer cgroup then removed)."""
    launch = files.read(bid, "launch.json") or {}
    started = files.read(bid, "started.json") or {}
    pid, pid_start = started.get("pid"), started.get("pid_start")
    if started.get("pid_boot", boot_id()) != boot_id():
        pid = None  # a group of an earlier boot: none of it runs, and its pid and start may be another's now
    tag = str(launch.get("cgroup") or bid)
    if launch.get("suspendable"):  # a frozen process does not die: thawed first
        thaw_leftovers(tag)
    gone = fence(
        launch,
        int(pid) if isinstance(pid, int) else None,
        timeout=timeout,
        pid_start=pid_start if isinstance(pid_start, int) else None,  # None: an older shepherd's record
    )
    if gone and launch.get("suspendable"):
        remove_freezer(tag)
    return gone


def record_lost(files: AttemptFiles, bid: str) -> bool:
    """Fence attempt `bid`, then record its end (unless its shepherd wrote one after all); False while some of
    its processes survive a kill. An OSError (a full disk) is the caller's: it tries again on its next pass."""
    if not fence_attempt(files, bid):
        return False
    if files.exists(bid, "result.json"):
        return True  # the shepherd wrote it after all
    if files.exists(bid, "cancel"):
        files.write_cancelled(bid)
    else:
        files.write_result(bid, lost_result())
    return True
