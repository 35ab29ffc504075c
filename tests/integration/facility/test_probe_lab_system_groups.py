"""A Unix group is a lab for memory only when it is no system group (gid >= 1000) or `[memory] lab_groups` names
it: `users` (gid 100), which every account may be in, made one user's promoted lesson everyone's, the cluster scope
that only admins write (probe with real users and groups)."""

from __future__ import annotations

import grp
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontdesk import identity
from frontdesk.errors import Forbidden
from frontdesk.memory.scopes import Membership
from frontdesk.memory.store import LessonStore
from frontdesk.store.db import open_db
from unix_users import ensure_user

A, B, LAB = "fdt3a", "fdt3b", "fdt3lab"


@pytest.fixture
def two_users(facility_users: dict[str, int]) -> Iterator[tuple[str, str]]:
    for user in (A, B):
        ensure_user(user, ("users", LAB))
    identity._GROUP_CACHE.clear()
    yield A, B
    identity._GROUP_CACHE.clear()


def test_a_system_group_is_no_lab_unless_named(two_users: tuple[str, str], tmp_path: Path) -> None:
    assert grp.getgrnam("users").gr_gid < 1000 <= grp.getgrnam(LAB).gr_gid
    assert "users" in identity.groups_of(A)
    m = Membership()
    assert m.labs_of(A) == [LAB] and not m.may_write(B, "lab", "users") and m.may_write(B, "lab", LAB)
    assert ("lab", "users") not in m.scopes(A)
    assert Membership(lab_groups=frozenset({"users"})).labs_of(A) == ["users"]  # a site may say so
    store = LessonStore(open_db(tmp_path / "frontdesk.db"), m)
    lesson = store.add(B, "host_oom", "needs more memory", application="fdt3app", fix_text="use --mem 1T")
    with pytest.raises(Forbidden):
        store.promote(lesson.id, B, "lab", "users")
    shared = store.promote(lesson.id, B, "lab")  # the one lab B is in
    assert (shared.scope, shared.scope_name) == ("lab", LAB)
    assert store.promote(shared.id, A, "lab").approved_by == A  # a second member of the lab approves it
    assert [x.id for x in store.search("memory", A)] == [shared.id]  # A, B's labmate, reads it


def test_a_system_group_is_no_lab_for_access_either(two_users: tuple[str, str]) -> None:
    """`[access]`: with `labmates_read_jobs`, sharing `users` made every account a labmate of every other."""
    roles = identity.Roles.from_section({"labmates_read_jobs": True})
    assert roles.labs_of(A) == (LAB,) and roles.labmates(A, B)  # the lab group they share
    assert "users" not in roles.labs_of(B)
    named = identity.Roles.from_section({"labmates_read_jobs": True, "lab_groups": ["users"]})
    assert named.labs_of(A) == ("users",)  # a site may say so
    other = "fdt3c"
    ensure_user(other, ("users",))
    identity._GROUP_CACHE.clear()
    assert "users" in identity.groups_of(other) and not roles.labmates(A, other)
