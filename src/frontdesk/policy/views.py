"""The policy plug-in's views: its part of `frontdesk cluster` and its table on the web page. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from frontdesk.plugins import Json, Panel
from frontdesk.policy.config import PolicyConfig
from frontdesk.policy.health import Verdict
from frontdesk.spec.accelerators import CATALOG, match_model

if TYPE_CHECKING:
    from frontdesk.identity import Caller

__all__ = ["Revoked", "cluster_view", "gpu_models", "policy_panel"]

Revoked = tuple[str, str, float]
"""(principal, reason, until) of a trial privilege revoked now."""


def gpu_models(gpus: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The backend's GPUs counted by catalog model (their own model name when the catalog has none)."""
    models: dict[str, int] = {}
    for gpu in gpus:
        key = match_model(str(gpu.get("model", "")), int(gpu.get("memory_bytes") or 0))
        key = key or str(gpu.get("model") or "unknown")
        models[key] = models.get(key, 0) + 1
    return models


def _scalars(data: Mapping[str, object]) -> dict[str, Json]:
    """A flat record's JSON form (the accelerator catalog's: every field a scalar)."""
    return {k: v for k, v in data.items() if v is None or isinstance(v, str | int | float)}


def cluster_view(
    version: int,
    refused: str | None,
    cfg: PolicyConfig,
    models: Mapping[str, int],
    drained: Mapping[str, Verdict],
    revoked: Sequence[Revoked],
) -> dict[str, Json]:
    """Pools, the accelerator catalog, drained nodes and the policy version (for `frontdesk cluster`)."""
    pools: list[Json] = [p.model_dump(exclude_none=True) for p in cfg.pools]
    borrow: list[Json] = [b.model_dump() for b in cfg.borrow]
    catalog: list[Json] = [_scalars(a.to_dict()) for a in CATALOG]
    return {
        "version": version,
        "refused": refused,
        "pools": pools,
        "gpu_models": dict(models),
        "borrow": borrow,
        "catalog": catalog,
        "drained": {k: {"check": v.check, "detail": v.detail} for k, v in drained.items()},
        "trial_revoked": [{"principal": p, "reason": reason, "until": until} for p, reason, until in revoked],
    }


def policy_panel(
    cfg: PolicyConfig,
    models: Mapping[str, int],
    drained: Mapping[str, Verdict],
    revoked: Sequence[Revoked],
    caller: Caller,
    now: float,
) -> Panel:
    """Pools, GPU models, drained nodes and the trial privilege: the caller's own standing (everyone's for an
    admin)."""
    rows = [("pool", p.name, ", ".join(map(str, p.classes or [])), str(p.partition or "")) for p in cfg.pools]
    rows += [("GPU model", model, f"{n} device(s)", "") for model, n in sorted(models.items())]
    rows += [("drained", node, str(v.check), str(v.detail)[:160]) for node, v in drained.items()]
    mine = [r for r in revoked if caller.admin or r[0] == caller.user]
    rows += [("trial revoked", p, reason[:160], f"{until - now:.0f} s left") for p, reason, until in mine]
    if not mine:
        rows.append(("trial", "everyone" if caller.admin else caller.user, "trial privilege held", ""))
    return Panel("Pools and trials", ("what", "name", "detail", "more"), tuple(rows))
