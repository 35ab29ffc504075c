"""The plug-in seam of the gateway: guard, memory, policy and agent integrations attach here.

A plug-in is an object with a `name` and any of these methods (all optional):
- `attach(gateway)`: called once at start; subscribe to the bus, start background tasks.
- `admit(spec, ctx) -> Admission | None`: called on every submission in order guard → memory → policy;
  may raise `Denied`; returns notices (warnings shown to the submitter and stored as events) and
  decisions (class, partition, priority, qos).
- `enrich(job, report) -> dict`: called once when a job ends, before the report is stored; the dict is
  merged into `report["extra"][name]` (e.g. matched lessons).
- `router()`: a FastAPI APIRouter mounted under /v1 (imported only by the server).
- `stop()`: called at shutdown.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Admission", "Notice", "Redactor", "SubmitContext", "PLUGIN_PATHS", "load_plugins"]

log = logging.getLogger("frontdesk.plugins")

Redactor = Callable[[str], str]
"""Masks secrets in text (the gateway is handed `guard.secrets.redact` by the server)."""

PLUGIN_PATHS: dict[str, str] = {
    "guard": "frontdesk.guard.plugin:GuardPlugin",
    "memory": "frontdesk.memory.plugin:MemoryPlugin",
    "policy": "frontdesk.policy.plugin:PolicyPlugin",
    "agents": "frontdesk.agents.plugin:AgentsPlugin",
    "slurm": "frontdesk.backends.slurm.plugin:SlurmPlugin",
}
"""Name -> import path, in the order submissions pass through them (guard, then memory, then policy)."""


@dataclass(frozen=True)
class SubmitContext:
    """Who submits, from where: filled by the API from the peer credentials and the client's context."""

    principal: str
    uid: int | None = None
    groups: tuple[str, ...] = ()
    session: str | None = None
    harness: str | None = None
    cwd: str | None = None
    source: str = "cli"
    env: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notice:
    """Something the submitter should read (a known failure, a guard question, a policy change)."""

    source: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Admission:
    """A plug-in's answer to a submission."""

    notices: list[Notice] = field(default_factory=list)
    job_class: str | None = None
    class_reason: str | None = None
    partition: str | None = None
    priority: int | None = None
    qos: str | None = None


def load_plugins(settings: Any) -> list[Any]:
    """Instantiate every installed plug-in named in `[gateway] plugins` / FRONTDESK_PLUGINS (default: all)."""
    import os

    wanted = settings.section("gateway").get("plugins")
    if os.environ.get("FRONTDESK_PLUGINS") is not None:
        wanted = [w.strip() for w in os.environ["FRONTDESK_PLUGINS"].split(",") if w.strip()]
    out = []
    for short, path in PLUGIN_PATHS.items():
        module_name, _, cls_name = path.partition(":")
        if wanted is not None and short not in wanted:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # that plug-in is not built yet
            raise
        out.append(getattr(module, cls_name)(settings))
    return out
