"""The guard's plain data: the decision, the verdict, and the context a check runs in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Decision", "Verdict", "Partition", "GuardContext", "NodeRole"]


class Decision(StrEnum):
    """What the guard says about a command, in rising severity."""

    ALLOW = "allow"
    """Nothing matched: run it."""
    ASK = "ask"
    """Something risky matched: a person (or the agent, with the reason) should confirm."""
    DENY = "deny"
    """Destructive or sandbox-widening: do not run it; the alternative says what to do instead."""

    @property
    def rank(self) -> int:
        """Severity order: allow < ask < deny."""
        return ("allow", "ask", "deny").index(self.value)

    @property
    def exit_code(self) -> int:
        """The exit code of `frontdesk guard check`: 0 allow, 1 ask, 2 deny."""
        return self.rank


class NodeRole(StrEnum):
    """Where the check runs."""

    LOGIN = "login"
    COMPUTE = "compute"
    WORKSTATION = "workstation"


@dataclass(frozen=True)
class Verdict:
    """The answer of one check: decision, the rule that fired, why, and what to do instead."""

    decision: Decision
    rule: str | None = None
    reason: str = ""
    alternative: str | None = None
    matches: tuple[str, ...] = ()
    taint_source: str | None = None
    fetches: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form (`frontdesk guard check --json`)."""
        return {
            "verdict": str(self.decision),
            "rule": self.rule,
            "reason": self.reason,
            "alternative": self.alternative,
            "matches": list(self.matches),
            "taint_source": self.taint_source,
        }


@dataclass(frozen=True)
class Partition:
    """A site partition and what it is for (`[guard.partitions.NAME]`)."""

    name: str
    purpose: str = "production"
    max_time_s: int | None = None
    max_nodes: int | None = None


def _no_file(path: str) -> str | None:
    return None


@dataclass
class GuardContext:
    """Everything a check needs to know about where and for whom it runs; I/O is passed in."""

    node_role: NodeRole = NodeRole.WORKSTATION
    env: Mapping[str, str] | None = None
    env_complete: bool = True
    cwd: str = "/"
    home: str = "/root"
    scratch_roots: tuple[str, ...] = ("/scratch",)
    home_roots: tuple[str, ...] = ("/home",)
    shared_paths: tuple[str, ...] = ()
    project_roots: tuple[str, ...] = ()
    temp_roots: tuple[str, ...] = ("/tmp", "/var/tmp")
    protected_files: tuple[str, ...] = ()
    gpus_managed: bool = False
    role_source: str = "default"
    partitions: dict[str, Partition] = field(default_factory=dict)
    tainted: Callable[[str], str | None] = lambda path: None
    taint_text: Callable[[str], str | None] = lambda text: None
    read_file: Callable[[str], str | None] = _no_file
    process_info: Callable[[int], str | None] = lambda pid: None
    """Who a pid belongs to when it is not this session's to kill: a frontdesk job's, another user's."""
    scan_scripts: bool = True
    rules: Any = None
