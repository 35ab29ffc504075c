"""Array flags and task names for the job commands (`--array`, `--sweep`, `12_3`) and `frontdesk retry`.

Loaded only by the commands that need it (the CLI's hot path stays small); stdlib and the client only.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["array_flags", "cmd_retry", "task_ids"]


def _sweep_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def array_flags(args: argparse.Namespace, spec: dict[str, Any]) -> None:
    """--array, --sweep NAME=V1,V2 (a grid), --aftercorr, --array-report into the spec."""
    from frontdesk.errors import UserError

    if args.array:
        spec["array"] = args.array
    if args.sweep:
        grid: dict[str, list[Any]] = {}
        for item in args.sweep:
            name, sep, values = item.partition("=")
            if not sep or not values:
                raise UserError(f"--sweep expects NAME=V1,V2,..., got {item!r}")
            grid[name] = [_sweep_value(v) for v in values.split(",")]
        spec["sweep"] = grid
    if args.aftercorr:
        spec["aftercorr"] = int(args.aftercorr) if args.aftercorr.isdigit() else args.aftercorr
    if args.array_report:
        spec["array_report"] = args.array_report


def task_ids(client: Any, texts: list[str]) -> list[int | str]:
    """Job ids for `12` (a job or a whole array) and `12_3` (task 3 of array 12)."""
    from frontdesk.errors import UserError

    out: list[int | str] = []
    for text in texts:
        array, sep, index = str(text).strip().partition("_")
        if not str(text).isascii():  # int() reads '١٢' as 12: not an id the user typed
            raise UserError(f"not a job id: {text!r} (expected 12, or 12_3 for task 3 of array 12)")
        if not sep:
            out.append(text)
            continue
        if not (array.isdigit() and index.isdigit()):
            raise UserError(f"not a job id: {text!r} (expected 12, or 12_3 for task 3 of array 12)")
        out.append(client.request("GET", f"/v1/jobs/{int(array)}/tasks/{int(index)}")["id"])
    return out


def _own(job: dict[str, Any]) -> None:
    """A retry submits the job's command, environment and directory AS THE CALLER: only its owner's (an admin
    who may read every job would otherwise run a user's code as the admin)."""
    import os
    import pwd

    from frontdesk.errors import Forbidden

    me = pwd.getpwuid(os.geteuid()).pw_name
    owner = job.get("principal")
    if owner is not None and owner != me:
        raise Forbidden(f"job {job['id']} is {owner}'s: a retry would run its command as you ({me}); only {owner} can")


def cmd_retry(args: argparse.Namespace) -> int:
    """Submit again, now: an array's tasks that did not complete as a new array (same sweep points, same %N), or
    one job or task as a new job; dependencies are dropped (the retry runs now)."""
    from frontdesk.cli.jobs import _context, _submitted
    from frontdesk.cli.parsing import client as _client
    from frontdesk.errors import Conflict
    from frontdesk.jobs.state import JobState

    c = _client()
    job = c.job(task_ids(c, [args.id])[0])
    _own(job)
    spec = {k: v for k, v in job["spec"].items() if k not in ("depends_on", "aftercorr", "idempotency_key")}
    if job.get("array"):
        tasks = c.jobs(array=job["id"], limit=100000)
        if any(not JobState(t["state"]).terminal for t in tasks):
            raise Conflict(f"array {job['id']} still has tasks running: retry it once it ended (or cancel it)")
        failed = sorted(t["array_index"] for t in tasks if t["state"] != JobState.COMPLETED)
        if not failed:
            raise Conflict(f"every task of array {job['id']} completed: nothing to retry")
        from frontdesk.reports.arrays import index_ranges

        limit = job["array"].get("max_running")
        spec["array"] = index_ranges(failed) + (f"%{limit}" if limit else "")
    elif not JobState(job["state"]).terminal:
        raise Conflict(f"job {job['id']} has not ended ({job['state']}): nothing to retry yet")
    elif job.get("array_index") is not None:  # a task alone keeps its index: scripts that read it still work
        index = str(job["array_index"])
        spec["env"] = {**(spec.get("env") or {}), "FRONTDESK_ARRAY_TASK_ID": index, "SLURM_ARRAY_TASK_ID": index}
    new = c.submit(spec=spec, context=_context("cli"))
    return _submitted(args, new)
