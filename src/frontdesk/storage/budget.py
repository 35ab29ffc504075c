"""The per-principal metadata budget: a token bucket per (user, agent session), like Slurm's `rl_*` knobs.

A token is one metadata operation (readdir, stat, open) that an operator made for the principal. A question
is admitted while the bucket holds at least one token; its real cost is charged afterwards (the bucket may
go into debt), so a big walk is paid for in full and the next question waits until the debt is refilled.
An empty bucket answers `RateLimited` with `retry_after` seconds (HTTP 429 + Retry-After, CLI exit 75).
Pure: the clock is passed in. Site config: `[storage] rate` (tokens/s, default 20000), `burst` (default
200000), both per principal; `user_rate` and `user_burst` (default four times those) per user over all of its
sessions: the session is a name the client sends, so without the user's own bucket a new name was a full
bucket again. At most MAX_TALLIES session buckets are kept; past that, full ones (as good as new) are dropped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from frontdesk.errors import ConfigError, RateLimited

__all__ = ["MAX_TALLIES", "Budget", "BudgetConfig", "Principal", "Tally"]

Principal = tuple[str, str]
"""(user, agent session or "-")."""


MAX_TALLIES = 4096
"""Session buckets kept at most (each new session name makes one); past that, full ones are dropped."""
USER_SHARE = 4.0
"""A user's own bucket, by default: this many sessions' worth (four agents at full speed)."""


@dataclass(frozen=True)
class BudgetConfig:
    rate: float = 20000.0
    burst: float = 200000.0
    user_rate: float = 0.0
    """Tokens per second for a user over all of its sessions (0: USER_SHARE times `rate`)."""
    user_burst: float = 0.0
    """The user's bucket size (0: USER_SHARE times `burst`)."""

    @classmethod
    def from_section(cls, section: Mapping[str, object]) -> BudgetConfig:
        out: dict[str, float] = {}
        for key in ("rate", "burst", "user_rate", "user_burst"):
            value = section.get(key, getattr(cls, key) or USER_SHARE * float(out[key.removeprefix("user_")]))
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e12:
                raise ConfigError(f"[storage] {key} must be a positive number, got {value!r}")
            out[key] = float(value)
        return cls(**out)

    def for_users(self) -> BudgetConfig:
        """The configuration of the users' own buckets."""
        return BudgetConfig(self.user_rate or USER_SHARE * self.rate, self.user_burst or USER_SHARE * self.burst)


@dataclass
class Tally:
    """Counters of one principal (shown by GET /v1/fs/budget)."""

    tokens: float
    updated: float
    admitted: int = 0
    refused: int = 0
    spent: int = 0


@dataclass
class Budget:
    config: BudgetConfig = field(default_factory=BudgetConfig)
    tallies: dict[Principal, Tally] = field(default_factory=dict)
    users: dict[str, Tally] = field(default_factory=dict)
    """Each user's own bucket, over all of its sessions."""

    def _refill(self, who: Principal, now: float) -> Tally:
        t = self.tallies.get(who)
        if t is None:
            if len(self.tallies) >= MAX_TALLIES:
                self._drop_full(now)
            t = self.tallies[who] = Tally(self.config.burst, now)
        return _refilled(t, self.config, now)

    def _user(self, user: str, now: float) -> Tally:
        t = self.users.get(user)
        if t is None:
            t = self.users[user] = Tally(self.config.for_users().burst, now)
        return _refilled(t, self.config.for_users(), now)

    def _drop_full(self, now: float) -> None:
        """Forget session buckets that refilled (a new one would be the same); never one in debt."""
        for who, t in list(self.tallies.items()):
            if _refilled(t, self.config, now).tokens >= self.config.burst:
                del self.tallies[who]
        for user, t in list(self.users.items()):
            if _refilled(t, self.config.for_users(), now).tokens >= self.config.for_users().burst:
                del self.users[user]

    def admit(self, who: Principal, now: float) -> None:
        """Raise RateLimited (with retry_after seconds) unless `who` and its user both have a token left."""
        t, u = self._refill(who, now), self._user(who[0], now)
        for tally, config, whose in (
            (t, self.config, f"session {who[1]}"),
            (u, self.config.for_users(), "all sessions"),
        ):
            if tally.tokens < 1:
                t.refused += 1
                wait = max(0.001, (1 - tally.tokens) / config.rate)
                raise RateLimited(
                    f"metadata budget of {who[0]} ({whose}) is empty; retry after {math.ceil(wait)} s",
                    retry_after=round(wait, 3),
                )
        t.admitted += 1

    def charge(self, who: Principal, cost: int, now: float) -> None:
        """Take the metadata operations a question really cost (from the session's bucket and its user's)."""
        t, u = self._refill(who, now), self._user(who[0], now)
        t.tokens -= cost
        t.spent += cost
        u.tokens -= cost

    def counters(self, now: float) -> list[dict[str, object]]:
        for who in list(self.tallies):
            self._refill(who, now)
        return [
            {"user": u, "session": s, "tokens": round(t.tokens, 1), "admitted": t.admitted, "refused": t.refused,
             "spent": t.spent}
            for (u, s), t in sorted(self.tallies.items())
        ]  # fmt: skip


def _refilled(t: Tally, config: BudgetConfig, now: float) -> Tally:
    t.tokens = min(config.burst, t.tokens + max(0.0, now - t.updated) * config.rate)
    t.updated = now
    return t
