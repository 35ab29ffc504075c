"""The per-principal metadata budget: a token bucket per (user, agent session), like Slurm's `rl_*` knobs.

A token is one metadata operation (readdir, stat, open) that an operator made for the principal. A question
is admitted while the bucket holds at least one token; its real cost is charged afterwards (the bucket may
go into debt), so a big walk is paid for in full and the next question waits until the debt is refilled.
An empty bucket answers `RateLimited` with `retry_after` seconds (HTTP 429 + Retry-After, CLI exit 75).
Pure: the clock is passed in. Site config: `[storage] rate` (tokens/s, default 20000), `burst` (default
200000), both per principal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from frontdesk.errors import ConfigError, RateLimited

__all__ = ["Budget", "BudgetConfig", "Principal", "Tally"]

Principal = tuple[str, str]
"""(user, agent session or "-")."""


@dataclass(frozen=True)
class BudgetConfig:
    rate: float = 20000.0
    burst: float = 200000.0

    @classmethod
    def from_section(cls, section: Mapping[str, object]) -> BudgetConfig:
        out = {}
        for key in ("rate", "burst"):
            value = section.get(key, getattr(cls, key))
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e12:
                raise ConfigError(f"[storage] {key} must be a positive number, got {value!r}")
            out[key] = float(value)
        return cls(**out)


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

    def _refill(self, who: Principal, now: float) -> Tally:
        t = self.tallies.get(who)
        if t is None:
            t = self.tallies[who] = Tally(self.config.burst, now)
        t.tokens = min(self.config.burst, t.tokens + max(0.0, now - t.updated) * self.config.rate)
        t.updated = now
        return t

    def admit(self, who: Principal, now: float) -> None:
        """Raise RateLimited (with retry_after seconds) unless `who` has a token left."""
        t = self._refill(who, now)
        if t.tokens < 1:
            t.refused += 1
            wait = max(0.001, (1 - t.tokens) / self.config.rate)
            raise RateLimited(
                f"metadata budget of {who[0]} (session {who[1]}) is empty; retry after {math.ceil(wait)} s",
                retry_after=round(wait, 3),
            )
        t.admitted += 1

    def charge(self, who: Principal, cost: int, now: float) -> None:
        """Take the metadata operations a question really cost."""
        t = self._refill(who, now)
        t.tokens -= cost
        t.spent += cost

    def counters(self, now: float) -> list[dict[str, object]]:
        for who in list(self.tallies):
            self._refill(who, now)
        return [
            {"user": u, "session": s, "tokens": round(t.tokens, 1), "admitted": t.admitted, "refused": t.refused,
             "spent": t.spent}
            for (u, s), t in sorted(self.tallies.items())
        ]  # fmt: skip
