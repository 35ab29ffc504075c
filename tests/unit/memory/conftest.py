"""A lesson store over a real SQLite database, with a fake clock and a lab/project configuration."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_helpers import DAY, Clock

from frontdesk.memory.scopes import Membership
from frontdesk.memory.store import LessonStore
from frontdesk.store.db import open_db


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def membership() -> Membership:
    return Membership.from_section(
        {
            "labs": {"physics": ["alice", "carol"]},
            "projects": {"climate": {"users": ["alice", "erin"], "paths": ["/proj/climate"]}},
            "admins": ["ops"],
            "unix_groups": False,
        }
    )


@pytest.fixture
def store(tmp_path: Path, membership: Membership, clock: Clock) -> LessonStore:
    conn = open_db(tmp_path / "frontdesk.db")
    return LessonStore(conn, membership, stale_after_s=30 * DAY, site_threshold=3, clock=clock)
