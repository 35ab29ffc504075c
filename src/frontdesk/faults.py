"""Kill points for fault-injection tests: `FRONTDESK_FAULT=<point>[:<n>]` SIGKILLs this process at the n-th hit.

The variable is read once, by `arm()` (the gateway calls it at start, the shepherd may too); `point(name)` is a
no-op (one comparison) unless that point is armed. `n` defaults to 1 (the first time the point is reached).
Several points: `FRONTDESK_FAULT=after_state_stored:2,after_report_stored`.

Points in the gateway's end path (see `core/ending.py`). A job's end is one commit (state, report, events):
- `after_report_built`: the report built, nothing of the end stored.
- `after_state_stored`, then `after_report_stored`: the terminal state, the report and the terminal events
  committed together, not fanned out. (An array's end stores its state first: `after_report_built` and
  `after_report_stored` are then its later stages.)
Other owners add their own points here (one line each, with where they sit).
- `shepherd_started` (shepherd): the job's process started, started.json written, nothing waited on yet.
- `shepherd_job_exited` (shepherd): the job exited (status collected), no result.json yet.
- `shepherd_result_written` (shepherd): result.json written, the gateway not yet notified.
- `before_backend_cancel` (gateway `_step`): a cancel stored (`cancel_requested`), the backend not yet asked.
- `migration_uncommitted`, `migration_committed` (`store/db.apply_schema`): one schema migration run, before and
  after its COMMIT (`:n` counts migrations across components in `open_db`'s order).
- `array_task_launched` (`core/arrays._hand_over`): one task's backend id stored; the batch's later tasks handed
  to the backend, their ids not stored yet.
- `array_uncommitted` (`store/arrays.store_array`, a worker thread): an array's parent, tasks and events
  inserted, not committed: after a restart none of it is there.
- `records_settled`, `record_removed` (`backends/slurm/sweep.py`, a worker thread): a sweep pass of the Slurm
  crash-recovery files asked the database which attempts are settled, nothing deleted; one unit of files deleted.
"""

from __future__ import annotations

import os
import signal

__all__ = ["arm", "armed", "point"]

_ENV = "FRONTDESK_FAULT"
_armed: dict[str, int] = {}
_hits: dict[str, int] = {}


def arm(spec: str | None = None) -> None:
    """Read the kill points from `spec` (default: the environment variable); a bad entry raises ValueError."""
    text = os.environ.get(_ENV, "") if spec is None else spec
    _armed.clear()
    _hits.clear()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, count = item.partition(":")
        if not name.replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"{_ENV}: bad kill point {item!r}")
        try:
            nth = int(count) if count else 1
        except ValueError:
            raise ValueError(f"{_ENV}: bad count in {item!r}") from None
        if nth < 1:
            raise ValueError(f"{_ENV}: count must be >= 1 in {item!r}")
        _armed[name] = nth


def armed() -> dict[str, int]:
    """The armed points and the hit that kills (for logs and tests)."""
    return dict(_armed)


def point(name: str) -> None:
    """A kill point: SIGKILL this process if `name` is armed and this is its n-th hit."""
    if not _armed or name not in _armed:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == _armed[name]:
        os.kill(os.getpid(), signal.SIGKILL)
