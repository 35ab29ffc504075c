"""Per-user caps on what one principal keeps in the gateway: unfinished jobs and agent sessions.

One user of a facility gateway could store jobs (10,000-task arrays, any number of them) and sessions until the
state disk filled, and then every user's submissions failed (507). The site caps each principal instead
(`[limits]` in frontdesk.toml); root and the admins are exempt, and a per-user gateway (mode "user") has one user,
its owner, who is:

    [limits]
    jobs_per_user = 20000     # pending, running and suspended rows: jobs, array tasks and each array's parent
    sessions_per_user = 1000  # agent sessions registered (hooks, `sessions register`, a job naming a session)

0 turns a cap off. A submission over the cap is refused before anything is stored (RateLimited, HTTP 429, one
line naming the limit). The job count is kept per principal as an upper bound, raised by every admission and
recounted from the store only when a submission would pass the cap: the submit path pays one dictionary look-up
and no index of its own (an index by principal and state cost each submission ~6% of the app's CPU in
bench/submit_app.py), and the count starts empty with each gateway. The recount reads the unfinished rows through
the `jobs_state` index (every user's unfinished rows: ~55 ms for 200,000 of them on this project's VMs), so a
principal is recounted at most once a second (RECOUNT_S): a client that keeps asking at the cap costs a dictionary
look-up per request, and room made by jobs that ended is seen within that second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from time import monotonic
from typing import Any

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError, RateLimited
from frontdesk.identity import Roles
from frontdesk.jobs.state import UNFINISHED_STATES

__all__ = ["LIMITS_KEYS", "DEFAULT_JOBS", "DEFAULT_SESSIONS", "RECOUNT_S", "JobQuota", "Limits", "over_cap"]

DEFAULT_JOBS = 20_000
DEFAULT_SESSIONS = 1_000
RECOUNT_S = 1.0
"""A principal near the cap is counted again from the store at most this often."""
_ACTIVE = ", ".join(f"'{s.value}'" for s in UNFINISHED_STATES)
_ACTIVE_SQL = f"SELECT count(*) FROM jobs WHERE principal=? AND state IN ({_ACTIVE})"


LIMITS_KEYS = TableKeys.of("limits", "jobs_per_user sessions_per_user")


def _cap(section: dict[str, Any], key: str, default: int) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"[limits].{key}: expected a whole number >= 0 (0: no cap), got {value!r}")
    return value


@dataclass(frozen=True)
class Limits:
    """The site's caps, and who is exempt."""

    jobs: int = DEFAULT_JOBS
    sessions: int = DEFAULT_SESSIONS
    roles: Roles | None = None
    """None: a per-user gateway (its one user is its owner and admin): nothing is capped."""

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        """`[limits]` of the settings; a facility gateway's `[access]` names the exempt admins."""
        section = settings.section("limits")
        unknown = sorted(set(section) - LIMITS_KEYS.keys)
        if unknown:
            raise ConfigError(f"[limits]: unknown setting {unknown[0]!r} (jobs_per_user, sessions_per_user)")
        roles = Roles.from_section(settings.section("access")) if settings.mode == "facility" else None
        jobs = _cap(section, "jobs_per_user", DEFAULT_JOBS)
        return cls(jobs, _cap(section, "sessions_per_user", DEFAULT_SESSIONS), roles)

    def exempt(self, user: str, groups: Iterable[str] | None = None) -> bool:
        """Root, the admins, and everyone on a per-user gateway."""
        return self.roles is None or self.roles.is_admin(user, groups)


def over_cap(what: str, limit: int, setting: str) -> RateLimited:
    """The one-line refusal naming the limit."""
    return RateLimited(f"{what}: the site's limit is {limit} per user ([limits].{setting}); nothing was stored")


class JobQuota:
    """Each principal's unfinished jobs, as an upper bound kept in memory and recounted near the cap."""

    def __init__(self, conn: Any, limit: int, clock: Callable[[], float] = monotonic) -> None:
        self.conn = conn
        self.limit = limit
        self.clock = clock
        self._bound: dict[str, int] = {}
        self._counted: dict[str, float] = {}
        """When each principal was last recounted (at most once per RECOUNT_S, whatever the outcome)."""

    def take(self, principal: str, n: int) -> None:
        """Admit `n` more rows of `principal`'s (counted from now on), or raise RateLimited (nothing counted)."""
        if not self.limit:
            return
        bound = self._bound.get(principal)
        if bound is None or bound + n > self.limit:
            at = self._counted.get(principal)
            now = self.clock()
            if bound is None or at is None or now - at >= RECOUNT_S:
                bound = int(self.conn.execute(_ACTIVE_SQL, (principal,)).fetchone()[0])  # jobs end: the bound drops
                self._bound[principal] = bound
                self._counted[principal] = now
            if bound + n > self.limit:
                raise over_cap(f"{bound} unfinished jobs and {n} more", self.limit, "jobs_per_user")
        self._bound[principal] = bound + n
