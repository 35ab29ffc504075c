"""Authorization: may this caller read or act on that object? Every refusal is journalled.

Rules (docs/facility.md):
- a job's owner and the admins read and act on it (cancel, hold, release);
- a labmate reads others' job records and reports only with `[access] labmates_read_jobs = true`, never
  their logs, never acts;
- everyone else sees others' job records (name, state, times) only with `[access] private_jobs = false`
  (like Slurm without `PrivateData=jobs`); capacity (the inventory) is for all;
- events reach the caller when they are about the caller (its jobs, its sessions, its refusals of nobody's
  object or its own); admins see all;
- an agent session id names the caller's own session (sessions are keyed by (user, id): agents/schema.py),
  so there is no other user's session to refuse;
- policy changes (reload, rollback, drain) are for admins;
- an admin's read of or action on another user's object is journalled too (`access.admin`), and so is a
  listing that showed an admin others' objects (one event per request naming them);
- `POST /v1/notify` (a re-query of named attempts) is for the gateway's own user (its shepherds), root and
  the `[access] notifiers` (Slurm's SlurmUser when it is not root, for the EpilogSlurmctld).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from frontdesk.errors import Forbidden
from frontdesk.events.models import Event, EventKind
from frontdesk.identity import Caller, Roles

__all__ = ["AUDIT_IDS", "Access", "Action"]

AUDIT_IDS = 10_000
"""Ids named by one listing's `access.admin` event (its `count` says how many there were)."""


class Action(StrEnum):
    """What a caller wants to do with a job."""

    LIST = "list"
    """See the job's record (name, state, times)."""
    READ = "read"
    """Read its report, or wait for it."""
    LOGS = "logs"
    """Read its raw output."""
    ACT = "act"
    """Cancel, hold, release."""


_PUBLIC_EVENTS = frozenset({EventKind.POLICY_LOADED, EventKind.NODE_DRAINED})
"""Events about the facility, not about anyone's work."""
_REFUSALS = frozenset({EventKind.ACCESS_DENIED, EventKind.ACCESS_ADMIN})
"""The audit trail: each names the caller (`principal`) and the owner of what it touched."""


class Access:
    """The decisions, over the site's roles; `publish` stores the audit events."""

    def __init__(self, roles: Roles, publish: Any) -> None:
        self.roles = roles
        self.publish = publish
        self.notifier_uids = frozenset({0, os.geteuid()})
        """Root and the gateway's own user (its shepherds); `roles.notifiers` names the others."""

    def may(self, caller: Caller, owner: str | None, action: Action) -> bool:
        """Whether `caller` may do `action` on an object owned by `owner`."""
        return caller.admin or self._as_user(caller, owner, action)

    def _as_user(self, caller: Caller, owner: str | None, action: Action) -> bool:
        """The rules without the admin role."""
        if caller.owns(owner):
            return True
        if action is Action.LIST and not self.roles.private_jobs:
            return True
        if action in (Action.LIST, Action.READ) and self.roles.labmates_read_jobs and owner:
            return bool(set(caller.labs) & set(self.roles.labs_of(owner)))
        return False

    def _journal(
        self, kind: EventKind, caller: Caller, action: str, target: str, owner: str | None, job_id: int | None
    ) -> None:
        self.publish(
            Event(
                kind,
                job_id=job_id,
                principal=caller.user,
                data={
                    "action": action,
                    "target": target,
                    "owner": owner,
                    "via": str(caller.via),
                    "uid": caller.uid,
                },
            )
        )

    def deny(self, caller: Caller, action: str, target: str, owner: str | None, job_id: int | None = None) -> Forbidden:
        """Journal a refusal (an `access.denied` event naming the caller) and return the error to raise."""
        self._journal(EventKind.ACCESS_DENIED, caller, action, target, owner, job_id)
        err = Forbidden(f"{caller.user} may not {action} {target}", target=target)
        err.journalled = True
        return err

    def audit(self, caller: Caller, action: str, target: str, owner: str | None, job_id: int | None = None) -> None:
        """Journal an admin's use of another user's object (`access.admin`); nothing for one's own."""
        if caller.admin and owner is not None and not caller.owns(owner):
            self._journal(EventKind.ACCESS_ADMIN, caller, action, target, owner, job_id)

    def audit_list(self, caller: Caller, kind: str, items: Iterable[tuple[object, str | None]]) -> None:
        """Journal an admin's listing that showed other users' objects: ONE `access.admin` event per request,
        naming them (`ids`, at most AUDIT_IDS; `count` is the whole number) and their `owners`. Objects the
        caller may list without the admin role (its own; others' where the site lets everyone) leave nothing."""
        if not caller.admin:
            return
        others = [(i, o) for i, o in items if not self._as_user(caller, o, Action.LIST)]
        if not others:
            return
        ids = [str(i) for i, _ in others]
        owners = sorted({o or "" for _, o in others})
        data: dict[str, Any] = {
            "action": "list",
            "target": kind,
            "owner": ",".join(owners),
            "via": str(caller.via),
            "uid": caller.uid,
        }
        data |= {"ids": ids[:AUDIT_IDS], "count": len(ids), "owners": owners}
        self.publish(Event(EventKind.ACCESS_ADMIN, principal=caller.user, data=data))

    def job(self, caller: Caller, job_id: int, owner: str | None, action: Action, verb: str | None = None) -> None:
        """Raise Forbidden (and journal it) unless the caller may do `action` on this job of `owner`."""
        if not self.may(caller, owner, action):
            raise self.deny(caller, verb or str(action), f"job {job_id}", owner, job_id)
        if not self._as_user(caller, owner, action):  # allowed as an admin only: leave a trace
            self.audit(caller, verb or str(action), f"job {job_id}", owner, job_id)

    def admin(self, caller: Caller, verb: str, target: str = "the policy") -> None:
        """Raise Forbidden (and journal it) unless the caller is an admin."""
        if not caller.admin:
            raise self.deny(caller, verb, target, None)

    def notify(self, caller: Caller) -> None:
        """Raise Forbidden (and journal it) unless the caller may push a re-query (`POST /v1/notify`)."""
        if caller.uid not in self.notifier_uids and caller.user not in self.roles.notifiers:
            raise self.deny(caller, "notify", "the gateway", None)

    def sees_event(self, caller: Caller, event: Event) -> bool:
        """Whether an event of the journal reaches this caller.

        A caller's own refusals reach it, except those about another user's object: they name its owner and
        say it exists, which the refused answer (a 404 for a session or a lesson, a 403 for a private job)
        did not. The audit trail keeps them all, for admins."""
        if caller.admin or event.kind in _PUBLIC_EVENTS:
            return True
        if event.kind in _REFUSALS:
            owner = event.data.get("owner")
            return caller.owns(event.principal) and (owner is None or caller.owns(owner))
        if caller.owns(event.principal):
            return True
        if event.job_id is None:
            return False
        return self.may(caller, event.principal, Action.READ)
