"""Which jobs a submission may wait on: only jobs its submitter may see, each as the submission resolves it."""

from __future__ import annotations

from frontdesk.api.access import Access, Action
from frontdesk.core.submission import resolve_deps
from frontdesk.errors import SpecError
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller
from frontdesk.spec.model import JobSpec

__all__ = ["may_depend"]


def may_depend(gw: Gateway, access: Access, caller: Caller, spec: JobSpec) -> None:
    """A job may wait only on jobs its submitter may see: each dependency as the submission resolves it (an id,
    `12_3` for a task of an array, a name of the caller's own), so no spelling skips the check."""
    ids: list[int] = []
    for ref in spec.depends_on:
        try:
            ids += resolve_deps(gw.store, [ref], caller.user)
        except SpecError:
            continue  # unknown: the submission says so (or finds its duplicate first), as before
    corr = spec.aftercorr
    if isinstance(corr, int) or (isinstance(corr, str) and corr.isascii() and corr.isdigit()):
        ids.append(int(corr))
    for dep in ids:
        found, owner = gw.store.owner_of(dep)  # the owner alone: no record built
        if found:
            access.job(caller, dep, owner, Action.LIST, "depend on")
