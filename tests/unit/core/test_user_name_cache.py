"""identity.user_name is cached (it runs on every request) but never stale past a change of /etc/passwd, nor past
a minute for users from other NSS sources: checked with a real user renamed under it (usermod -l)."""

from __future__ import annotations

import pwd
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontdesk import identity
from frontdesk.identity import user_name
from unix_users import ensure_user

OLD, NEW = "fdt21u", "fdt21v"


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture
def uid() -> Iterator[int]:
    """A real user named OLD (tests/unix_users.py; put back under its name if a killed run left it renamed)."""
    if _exists(NEW) and not _exists(OLD):
        subprocess.run(["usermod", "-l", OLD, NEW], check=True, capture_output=True)
    ensure_user(OLD, home=False, shell="/usr/sbin/nologin")
    identity._NAME_CACHE.clear()
    yield pwd.getpwnam(OLD).pw_uid
    if _exists(NEW):
        subprocess.run(["usermod", "-l", OLD, NEW], check=True, capture_output=True)
    identity._NAME_CACHE.clear()


def test_a_renamed_user_is_seen_on_the_next_call(uid: int) -> None:
    assert user_name(uid) == OLD
    assert user_name(uid) == OLD  # cached: /etc/passwd unchanged
    subprocess.run(["usermod", "-l", NEW, OLD], check=True, capture_output=True)  # rewrites /etc/passwd
    assert user_name(uid) == NEW


def test_an_answer_is_kept_at_most_a_minute(uid: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user from LDAP or sssd changes without /etc/passwd changing: stands in here by watching another file."""
    quiet = tmp_path / "passwd"
    quiet.write_text("")
    monkeypatch.setattr(identity, "_PASSWD", str(quiet))
    t0 = 1_000_000.0  # a clock of our own
    assert user_name(uid, now=t0) == OLD
    subprocess.run(["usermod", "-l", NEW, OLD], check=True, capture_output=True)
    assert user_name(uid, now=t0 + identity._NAME_TTL / 2) == OLD  # cached: the database is asked once a minute
    assert user_name(uid, now=t0 + identity._NAME_TTL + 1) == NEW


def test_a_uid_without_a_name_is_its_number() -> None:
    free = next(u for u in range(4_000_000_000, 4_000_001_000) if not _has_uid(u))
    assert user_name(free) == str(free)


def _has_uid(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
