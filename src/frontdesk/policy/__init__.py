"""Policy: pure decisions over a cluster view: classify, route to pools, prioritise (MLFQ, fairshare,
trials), place (catalog-aware, per-pool rules, backfill), drain unhealthy nodes.

Pure modules (no clock, no I/O): config, catalog, classify, model, priority, trial, placement, backfill,
scheduler, health, embedded. The gateway edge: plugin, api, history (database), probe (sensors).
"""

from frontdesk.policy.backfill import Reservation, backfill
from frontdesk.policy.classify import classify
from frontdesk.policy.config import PolicyConfig, parse_policy
from frontdesk.policy.model import JobView, NodeView, Part, Placement, RunningView
from frontdesk.policy.priority import FairshareLedger, level, rank
from frontdesk.policy.scheduler import plan
from frontdesk.policy.trial import Revocation, TrialLedger, TrialVerdict
from frontdesk.spec.accelerators import CATALOG, Accelerator, GpuNeed, eligible, prefer_least_scarce

__all__ = [
    "CATALOG",
    "Accelerator",
    "FairshareLedger",
    "GpuNeed",
    "JobView",
    "NodeView",
    "Part",
    "Placement",
    "PolicyConfig",
    "Reservation",
    "Revocation",
    "RunningView",
    "TrialLedger",
    "TrialVerdict",
    "backfill",
    "classify",
    "eligible",
    "level",
    "parse_policy",
    "plan",
    "prefer_least_scarce",
    "rank",
]
