"""Who may read which lessons: scopes (user, project, lab, cluster) and membership.

Membership comes from `[memory.labs]` and `[memory.projects]` in frontdesk.toml (name → list of users,
or for projects a table with `users` and `paths`), with the Unix group of the same name as a fallback
for labs. Every read of a lesson goes through `Membership.scopes(principal)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError
from frontdesk.identity import groups_of
from frontdesk.unixgroups import FIRST_LAB_GID, gid_of

__all__ = ["FIRST_LAB_GID", "MEMORY_KEYS", "SCOPES", "Membership", "Scope"]

SCOPES: tuple[str, ...] = ("user", "project", "lab", "cluster")
"""Narrowest first."""

Scope = tuple[str, str]
"""(scope, scope name): ("user", "alice"), ("lab", "physics"), ("cluster", "*")."""


def _users(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset([value])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise ConfigError(f"{where}: expected a list of user names, got {value!r}")


MEMORY_KEYS = TableKeys.of(
    "memory",
    "labs projects admins lab_groups unix_groups stale_after site_threshold",
    named={"labs": None, "projects": TableKeys.of("memory.projects", "users paths")},
)
"""`[memory]` as `Membership.from_section` reads it, and memory/plugin.py (stale_after, site_threshold)."""


@dataclass(frozen=True)
class Membership:
    """Labs and projects, and who belongs to each."""

    labs: Mapping[str, frozenset[str]] = field(default_factory=dict)
    projects: Mapping[str, frozenset[str]] = field(default_factory=dict)
    project_paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    admins: frozenset[str] = frozenset()
    use_unix_groups: bool = True
    lab_groups: frozenset[str] | None = None
    """`[memory] lab_groups`: the Unix groups that are labs; unset, every non-system group (gid >= 1000)."""

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Membership:
        """Parse the `[memory]` table (its `labs`, `projects`, `admins`, `unix_groups` keys)."""
        labs = {str(k): _users(v, f"[memory.labs].{k}") for k, v in dict(section.get("labs", {})).items()}
        projects: dict[str, frozenset[str]] = {}
        paths: dict[str, tuple[str, ...]] = {}
        for name, value in dict(section.get("projects", {})).items():
            if isinstance(value, dict):
                projects[str(name)] = _users(value.get("users", []), f"[memory.projects.{name}].users")
                raw = value.get("paths", [])
                paths[str(name)] = tuple(str(p).rstrip("/") for p in ([raw] if isinstance(raw, str) else raw))
            else:
                projects[str(name)] = _users(value, f"[memory.projects].{name}")
        admins = _users(section.get("admins", []), "[memory].admins")
        lab_groups = section.get("lab_groups")
        return cls(
            labs=labs,
            projects=projects,
            project_paths=paths,
            admins=admins,
            use_unix_groups=bool(section.get("unix_groups", True)),
            lab_groups=None if lab_groups is None else _users(lab_groups, "[memory].lab_groups"),
        )

    def is_lab_group(self, group: str) -> bool:
        """Whether a Unix group is a lab: listed in lab_groups, or (none listed) not a system group. A group that
        everyone is in (`users`, gid 100) would make one user's promoted lesson everyone's: the cluster scope."""
        if self.lab_groups is not None:
            return group in self.lab_groups
        return gid_of(group) >= FIRST_LAB_GID

    def unix_groups_of(self, principal: str) -> list[str]:
        """The Unix groups of the principal that are labs (empty when unix_groups is off)."""
        if not self.use_unix_groups:
            return []
        # the one group resolver (cached); the primary group is not a lab
        return sorted(g for g in groups_of(principal)[1:] if self.is_lab_group(g))

    def labs_of(self, principal: str, groups: Iterable[str] | None = None) -> list[str]:
        """The labs of a principal: configured lists, then Unix groups not named like a configured lab."""
        out = sorted(name for name, users in self.labs.items() if principal in users)
        extra = self.unix_groups_of(principal) if groups is None else [g for g in groups if self.is_lab_group(g)]
        out += sorted({g for g in extra if g not in self.labs and g not in out})
        return out

    def projects_of(self, principal: str) -> list[str]:
        """The projects a principal belongs to."""
        return sorted(name for name, users in self.projects.items() if principal in users)

    def project_for(self, workdir: str | None) -> str | None:
        """The configured project whose paths hold this working directory."""
        if not workdir:
            return None
        for name, paths in sorted(self.project_paths.items()):
            if any(workdir == p or workdir.startswith(p + "/") for p in paths):
                return name
        return None

    def scopes(self, principal: str, groups: Iterable[str] | None = None) -> list[Scope]:
        """Every scope the principal may read, narrowest first."""
        return (
            [("user", principal)]
            + [("project", p) for p in self.projects_of(principal)]
            + [("lab", lab) for lab in self.labs_of(principal, groups)]
            + [("cluster", "*")]
        )

    def may_write(self, principal: str, scope: str, name: str) -> bool:
        """Whether a principal may put a lesson into a scope (promotion, forgetting)."""
        if principal in self.admins or principal == "root":
            return True
        if scope == "user":
            return name == principal
        if scope == "project":
            return principal in self.projects.get(name, frozenset())
        if scope == "lab":
            return name in self.labs_of(principal)  # configured, else the user's Unix groups (identity.groups_of)
        return False  # the cluster scope: admins and site rules only
