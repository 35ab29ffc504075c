"""The trial privilege: fast start within a budget, and its loss for those who game it.

A trial is granted when the job is small (cpus, gpus, memory), asks for at most `walltime_cap`, and the
principal is under its rate of trials. A principal loses the privilege for `cooldown` when its trials
keep running to the cap, when it chains same-template trials right after one ran to the cap
(checkpoint-and-resubmit), or when it goes over the rate. Each loss carries a reason for the event.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from frontdesk.policy.config import TrialConfig
from frontdesk.spec.units import format_duration

__all__ = ["Revocation", "TrialLedger", "TrialVerdict"]


@dataclass(frozen=True)
class Revocation:
    """A principal lost the trial privilege: why, and until when."""

    principal: str
    reason: str
    until: float


@dataclass(frozen=True)
class TrialVerdict:
    """The answer to one trial request."""

    granted: bool
    reason: str
    revocation: Revocation | None = None


@dataclass
class _Principal:
    submits: deque[float] = field(default_factory=deque)
    cap_hits: deque[float] = field(default_factory=deque)
    capped_templates: dict[str, float] = field(default_factory=dict)
    """template → when a trial of it last ended at the cap."""
    chain: dict[str, int] = field(default_factory=dict)
    revoked_until: float = 0.0
    reason: str = ""


@dataclass
class TrialLedger:
    """Per-principal trial history; all times are passed in."""

    cfg: TrialConfig
    principals: dict[str, _Principal] = field(default_factory=dict)

    def _get(self, principal: str) -> _Principal:
        return self.principals.setdefault(principal, _Principal())

    def revoked(self, principal: str, now: float) -> Revocation | None:
        """The standing revocation of `principal`, if any."""
        p = self.principals.get(principal)
        if p and p.revoked_until > now:
            return Revocation(principal, p.reason, p.revoked_until)
        return None

    def _revoke(self, p: _Principal, principal: str, reason: str, now: float) -> Revocation:
        p.revoked_until = now + self.cfg.cooldown
        p.reason = reason
        p.cap_hits.clear()
        p.chain.clear()
        return Revocation(principal, reason, p.revoked_until)

    def restore(self, principal: str, reason: str, until: float) -> None:
        """Put back a revocation read from the journal (a restart must not hand the privilege back)."""
        p = self._get(principal)
        if until > p.revoked_until:
            p.revoked_until, p.reason = until, reason

    def request(
        self,
        principal: str,
        template: str,
        cpus: int,
        gpus: int,
        memory_bytes: int,
        walltime_s: float | None,
        now: float,
    ) -> TrialVerdict:
        """Decide a trial request and record it; may revoke (rate, chain)."""
        c = self.cfg
        if (standing := self.revoked(principal, now)) is not None:
            return TrialVerdict(False, f"trial privilege revoked until t={standing.until:.0f}: {standing.reason}")
        too_big = [
            w
            for w, over in (
                ("cpus", cpus > c.max_cpus),
                ("gpus", gpus > c.max_gpus),
                ("memory", memory_bytes > c.max_memory),
                ("walltime", not walltime_s or walltime_s > c.walltime_cap),
            )
            if over
        ]
        if too_big:
            why = (
                f"over the trial budget ({', '.join(too_big)}; cap {c.max_cpus} cores, {c.max_gpus} GPUs, "
                f"{format_duration(c.walltime_cap)})"
            )
            return TrialVerdict(False, why)
        p = self._get(principal)
        while p.submits and p.submits[0] <= now - c.rate_window:
            p.submits.popleft()
        p.submits.append(now)
        if len(p.submits) > c.rate:
            why = f"more than {c.rate} trials in {format_duration(c.rate_window)}"
            rev = self._revoke(p, principal, why, now)
            return TrialVerdict(False, rev.reason, rev)
        capped_at = p.capped_templates.get(template)
        if capped_at is not None and now - capped_at <= c.chain_gap:
            p.chain[template] = p.chain.get(template, 1) + 1
            if p.chain[template] >= c.chain_length:
                why = (
                    f"{p.chain[template]} chained resubmissions of one trial that ran to the "
                    f"{format_duration(c.walltime_cap)} cap"
                )
                rev = self._revoke(p, principal, why, now)
                return TrialVerdict(False, rev.reason, rev)
        return TrialVerdict(True, "trial within budget")

    def ended(
        self, principal: str, template: str, run_s: float, walltime_s: float | None, now: float
    ) -> Revocation | None:
        """Record a finished trial; revoke when trials keep running to their cap."""
        c = self.cfg
        cap = min(walltime_s or c.walltime_cap, c.walltime_cap)
        if run_s < 0.95 * cap:
            p = self.principals.get(principal)
            if p:
                p.capped_templates.pop(template, None)
                p.chain.pop(template, None)
            return None
        p = self._get(principal)
        p.capped_templates[template] = now
        p.chain.setdefault(template, 1)
        while p.cap_hits and p.cap_hits[0] <= now - c.strike_window:
            p.cap_hits.popleft()
        p.cap_hits.append(now)
        if len(p.cap_hits) >= c.cap_hits and self.revoked(principal, now) is None:
            return self._revoke(
                p,
                principal,
                f"{len(p.cap_hits)} trials ran to the "
                f"{format_duration(c.walltime_cap)} cap within "
                f"{format_duration(c.strike_window)}",
                now,
            )
        return None
