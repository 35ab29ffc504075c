"""Groups come from one resolver (identity.groups_of: os.getgrouplist, cached a minute), for a real user whose
membership changes under it; a lab made of a Unix group is what the user's own groups say."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from frontdesk import identity
from frontdesk.identity import Roles, groups_of
from frontdesk.memory.scopes import Membership
from unix_users import ensure_group, ensure_user

USER, LAB = "fdh6g", "fdh6lab"


def _leave() -> None:
    subprocess.run(["gpasswd", "-d", USER, LAB], capture_output=True)  # fine when it was no member


@pytest.fixture
def user_outside_the_lab(facility_users: dict[str, int]) -> Iterator[str]:
    ensure_user(USER)
    ensure_group(LAB)
    _leave()
    identity._GROUP_CACHE.clear()  # no answer cached by another test (or by this one's own clock)
    yield USER
    _leave()
    identity._GROUP_CACHE.clear()


def test_a_new_group_is_seen_once_the_cached_answer_is_a_minute_old(user_outside_the_lab: str) -> None:
    t0 = 1_000_000.0  # a clock of our own: the cache is keyed on readings, not on the wall
    before = groups_of(USER, now=t0)
    assert before[0] == USER and LAB not in before  # the primary group first
    subprocess.run(["usermod", "-aG", LAB, USER], check=True, capture_output=True)
    assert groups_of(USER, now=t0 + identity._GROUP_TTL / 2) == before  # cached: the database is asked once a minute
    after = groups_of(USER, now=t0 + identity._GROUP_TTL + 1)
    assert after == (USER, LAB)
    assert Roles().labs_of(USER, after) == (LAB,)


def test_memory_lab_membership_follows_the_same_resolver(user_outside_the_lab: str) -> None:
    m = Membership()
    assert not m.may_write(USER, "lab", LAB) and m.labs_of(USER) == []
    subprocess.run(["usermod", "-aG", LAB, USER], check=True, capture_output=True)
    identity._GROUP_CACHE.clear()  # stands for the minute passing
    assert m.may_write(USER, "lab", LAB) and m.labs_of(USER) == [LAB]
    assert m.may_write("alice", "lab", "lab1") and not m.may_write("carol", "lab", "lab1")
    assert Membership(labs={"lab1": frozenset({"carol"})}).may_write("carol", "lab", "lab1")  # a mapping wins
