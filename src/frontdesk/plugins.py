"""The plug-in seam of the gateway: guard, memory, policy and agent integrations attach here.

A plug-in is an object with a `name` and any of these hooks, one small Protocol each (all optional):
- `Attaches.attach(gateway)`: once at start, with a `GatewayHandle`; subscribe to the bus, start tasks,
  rebuild in-memory state from the store (`JobRecord.meta(name)` of active jobs).
- `Admits.admit(spec, ctx) -> Admission | None`: every submission, in order guard → memory → policy; may raise
  `Denied`; returns notices, decisions (class, partition, priority, qos) and `meta`: what the plug-in needs
  about this job later, stored with the job (`jobs.plugin_meta`) so a restart loses nothing.
- `Accepts.on_accepted(job)`: the job's row (with every plug-in's meta) is stored; before it is dispatched.
- `Enriches.enrich(job, report) -> Report`: once when a job ends, before the report is rendered and stored;
  takes the frozen `reports.model.Report` and returns it with the plug-in's typed section added
  (`report.with_section(name, section)`, the JSON's `extra.<name>`), and its next step amended if it knows
  better (`with_next_step`). A plug-in that fails or answers something else leaves the report as it was.
- `Routes.router()`: a FastAPI APIRouter mounted under /v1 (imported only by the server).
- `ShowsCluster.cluster_info()`: the plug-in's part of `frontdesk cluster`.
- `ShowsPanel.panel(caller)`: the plug-in's table on the gateway's web page (`Panel`), holding only what
  this caller may see (their own; everyone's for an admin).
- `Stops.stop()`: at shutdown.
Plug-ins register under the entry-point group `frontdesk.plugins` (the built-ins in pyproject.toml), so a
site package adds one without editing ours; backends under `frontdesk.backends`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from fastapi import APIRouter

    from frontdesk.backends.base import Backend
    from frontdesk.config import Settings
    from frontdesk.events.bus import Bus
    from frontdesk.events.models import Event
    from frontdesk.identity import Caller
    from frontdesk.jobs.record import JobRecord
    from frontdesk.reports.model import Report
    from frontdesk.spec.model import JobSpec
    from frontdesk.store.jobs import JobStore

__all__ = [
    "Accepts",
    "Admission",
    "Panel",
    "ShowsPanel",
    "Admits",
    "Attaches",
    "BACKEND_PATHS",
    "Enriches",
    "GatewayHandle",
    "Json",
    "Notice",
    "PLUGIN_PATHS",
    "Plugin",
    "Redactor",
    "Routes",
    "ShowsCluster",
    "Stops",
    "SubmitContext",
    "backend_classes",
    "load_plugins",
    "make_backend",
    "plugin_classes",
]

log = logging.getLogger("frontdesk.plugins")

Json: TypeAlias = "str | int | float | bool | None | list[Json] | dict[str, Json]"
"""A JSON value (what crosses the seam instead of Any)."""

Redactor = Callable[[str], str]
"""Masks secrets in text (the gateway is handed `guard.secrets.redact` by the server)."""

PLUGIN_PATHS: dict[str, str] = {
    "guard": "frontdesk.guard.plugin:GuardPlugin",
    "memory": "frontdesk.memory.plugin:MemoryPlugin",
    "policy": "frontdesk.policy.plugin:PolicyPlugin",
    "agents": "frontdesk.agents.plugin:AgentsPlugin",
    "slurm": "frontdesk.backends.slurm.plugin:SlurmPlugin",
    "storage": "frontdesk.storage.plugin:StoragePlugin",
}
"""The built-ins, in the order submissions pass through them (also registered as entry points)."""

GROUP = "frontdesk.plugins"

BACKEND_PATHS: dict[str, str] = {
    "local": "frontdesk.backends.local:LocalBackend",
    "slurm": "frontdesk.backends.slurm.backend:SlurmBackend",
}
"""The built-in backends (also registered as entry points in the group `frontdesk.backends`)."""

BACKEND_GROUP = "frontdesk.backends"


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
    extra: Mapping[str, Json] = field(default_factory=dict)
    request_id: str | None = None
    """The client's id for this request (`context.request_id`): sent again, it finds the job it made."""


@dataclass(frozen=True)
class Notice:
    """Something the submitter should read (a known failure, a guard question, a policy change)."""

    source: str
    text: str
    data: Mapping[str, Json] = field(default_factory=dict)


@dataclass
class Admission:
    """A plug-in's answer to a submission."""

    notices: list[Notice] = field(default_factory=list)
    job_class: str | None = None
    class_reason: str | None = None
    partition: str | None = None
    priority: int | None = None
    qos: str | None = None
    meta: Mapping[str, Json] | None = None
    """What this plug-in needs about the job later (stored with the job under the plug-in's name)."""
    metas: dict[str, Mapping[str, Json]] = field(default_factory=dict)
    """Filled by the gateway when it merges admissions: plug-in name -> its `meta`."""


class GatewayHandle(Protocol):
    """What a plug-in may use of the gateway."""

    settings: Settings
    store: JobStore
    bus: Bus
    backend: Backend

    def publish(self, event: Event) -> Event:
        """Store an event, then fan it out."""
        ...


@runtime_checkable
class Plugin(Protocol):
    """Every plug-in has a name (its key in `plugin_meta`, `report.extra` and `/v1/cluster`)."""

    name: str


@runtime_checkable
class Attaches(Protocol):
    def attach(self, gateway: GatewayHandle) -> None: ...


@runtime_checkable
class Admits(Protocol):
    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission | None: ...


@runtime_checkable
class Accepts(Protocol):
    def on_accepted(self, job: JobRecord) -> None: ...


@runtime_checkable
class Enriches(Protocol):
    def enrich(self, job: JobRecord, report: Report) -> Report: ...


@runtime_checkable
class Routes(Protocol):
    def router(self) -> APIRouter: ...


@runtime_checkable
class ShowsCluster(Protocol):
    def cluster_info(self) -> dict[str, Json]: ...


@dataclass(frozen=True)
class Panel:
    """A plug-in's table on the web page: plain text cells (the page escapes them)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


@runtime_checkable
class ShowsPanel(Protocol):
    def panel(self, caller: Caller) -> Panel | None: ...


@runtime_checkable
class Stops(Protocol):
    def stop(self) -> None | Awaitable[None]: ...


async def stop_all(plugins: Sequence[Plugin]) -> None:
    """Call every plug-in's `stop` (awaiting coroutines); a failure is logged, never raised."""
    for plugin in plugins:
        if not isinstance(plugin, Stops):
            continue
        try:
            res = plugin.stop()
            if asyncio.iscoroutine(res):
                await res
        except Exception:
            log.exception("plug-in %s failed to stop", plugin.name)


def plugin_classes() -> dict[str, str]:
    """Name -> "module:Class": the built-ins in their order, then entry points of site packages by name."""
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    out = dict(PLUGIN_PATHS)
    for name in sorted(found):
        if name not in out:
            out[name] = found[name]
    return out


def backend_classes() -> dict[str, str]:
    """Backend name -> "module:Class": the built-ins, then entry points of site packages."""
    found = {ep.name: ep.value for ep in entry_points(group=BACKEND_GROUP)}
    return {**{k: v for k, v in found.items() if k not in BACKEND_PATHS}, **BACKEND_PATHS}


def make_backend(settings: Settings) -> Backend:
    """The backend named in the settings (ConfigError when no such backend is installed)."""
    from frontdesk.errors import ConfigError

    classes = backend_classes()
    path = classes.get(settings.backend)
    if path is None:
        raise ConfigError(f"no backend {settings.backend!r}; installed: {', '.join(sorted(classes))}")
    module_name, _, cls_name = path.partition(":")
    backend: Backend = getattr(importlib.import_module(module_name), cls_name)(settings)
    return backend


def load_plugins(settings: Settings) -> list[Plugin]:
    """Instantiate every installed plug-in named in `[gateway] plugins` / FRONTDESK_PLUGINS (default: all)."""
    from frontdesk.errors import ConfigError

    wanted = settings.section("gateway").get("plugins")
    if os.environ.get("FRONTDESK_PLUGINS") is not None:
        wanted = [w.strip() for w in os.environ["FRONTDESK_PLUGINS"].split(",") if w.strip()]
    classes = plugin_classes()
    if wanted is not None:  # a typo (`gaurd`) silently ran without the guard; a string matched by substring
        if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted):
            raise ConfigError('[gateway] plugins: expected a list of names, such as ["guard", "memory"]')
        unknown = sorted(set(wanted) - set(classes) - {"none"})
        if unknown:
            raise ConfigError(
                f"[gateway] plugins: no plug-in {', '.join(map(repr, unknown))}; installed: {', '.join(classes)}"
            )
    out: list[Plugin] = []
    for short, path in classes.items():
        module_name, _, cls_name = path.partition(":")
        if wanted is not None and short not in wanted:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # that plug-in is not built yet
            raise
        plugin = getattr(module, cls_name)(settings)
        if not isinstance(plugin, Plugin):
            raise TypeError(f"plug-in {short} ({path}) has no name")
        out.append(plugin)
    return out
