"""Which Unix groups may be labs: not the system's (`users`, `sudo`, `docker`: gid below 1000), which everyone or
every admin is in; a lab made of one would give one user's lesson or job view to all. Shared by access (`identity`)
and memory (`memory.scopes`); a site names its lab groups in `[access] lab_groups` / `[memory] lab_groups`."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FIRST_LAB_GID", "gid_of", "lab_candidates"]

FIRST_LAB_GID = 1000
"""Groups below this gid are the system's: never labs unless the site's `lab_groups` names them."""
_GIDS: dict[str, int] = {}


def gid_of(group: str) -> int:
    """A group's gid (-1 when unknown), remembered: gids do not change under a running gateway."""
    gid = _GIDS.get(group)
    if gid is None:
        import grp

        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            gid = -1
        if len(_GIDS) < 4096:
            _GIDS[group] = gid
    return gid


def lab_candidates(groups: Iterable[str]) -> list[str]:
    """The groups of `groups` that count as labs when the site names none: gid 1000 and up."""
    return [g for g in groups if gid_of(g) >= FIRST_LAB_GID]
