"""The per-user job cap at the submit routes (core/quotas.py): checked before the gateway stores anything."""

from __future__ import annotations

from collections.abc import Sequence
from weakref import WeakKeyDictionary

from frontdesk.core.quotas import JobQuota, Limits
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller
from frontdesk.spec.model import JobSpec

__all__ = ["admit_jobs", "rows_of"]

_QUOTAS: WeakKeyDictionary[Gateway, tuple[Limits, JobQuota]] = WeakKeyDictionary()


def rows_of(spec: JobSpec) -> int:
    """The rows a spec stores: one job, or an array's parent and each of its tasks."""
    got = spec.array_range() if spec.is_array else None
    return 1 if got is None else 1 + len(got.indices)


def admit_jobs(gw: Gateway, caller: Caller, specs: Sequence[JobSpec]) -> None:
    """RateLimited (429) when these specs would take the caller past `[limits].jobs_per_user`; admins exempt."""
    if caller.admin:
        return
    got = _QUOTAS.get(gw)
    if got is None:
        limits = Limits.from_settings(gw.settings)
        got = _QUOTAS[gw] = (limits, JobQuota(gw.store.conn, limits.jobs))
    limits, quota = got
    if limits.exempt(caller.user, caller.groups):
        return
    quota.take(caller.user, sum(rows_of(s) for s in specs))
