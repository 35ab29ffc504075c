"""The Slurm backend's crash-recovery files are deleted once the database shows nothing can need them, never before,
and each pass reads a bounded number of entries (counted, not timed): real files, a real SQLite store with the
gateway's schema, the sweep the gateway runs (core/records.RecordSweep.once)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.slurm import sweep
from frontdesk.backends.slurm.launches import launch_path
from frontdesk.backends.slurm.recovery import record_path
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore
from frontdesk.store.settled import connect, ended_ids, settled_keys

OLD = time.time() - 3600


def _job(store: JobStore, **fields: Any) -> int:
    row = {"spec": "{}", "state": "PENDING", "backend": "slurm", "principal": "u", "submitted_at": time.time()}
    return store.insert_job(**{**row, **fields})


def _file(path: Path, text: str = "", mtime: float = OLD) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def _attempt_files(home: Path, key: str, mtime: float = OLD) -> list[Path]:
    return [_file(record_path(home, key), "844\n", mtime), _file(launch_path(home, key), "{}", mtime)]


def _link(home: Path, key: str, first: str) -> Path:
    link = home / "slurm-arrays" / "of" / key
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(first)
    os.utime(link, (OLD, OLD), follow_symlinks=False)
    return link


def _pass(home: Path, db: Path, budget: int = sweep.BUDGET) -> sweep.Swept:
    conn = connect(db)
    try:
        return sweep.sweep(home, lambda k: settled_keys(conn, k), lambda b: ended_ids(conn, "slurm", b), budget)
    finally:
        conn.close()


@pytest.fixture
def home(tmp_path: Path) -> tuple[Path, Path, JobStore]:
    db = tmp_path / "frontdesk.db"
    return tmp_path, db, JobStore(open_db(db))


def test_only_files_no_recovery_can_need_are_removed(home: tuple[Path, Path, JobStore]) -> None:
    root, db, store = home
    done = _job(store, state="COMPLETED", backend_id="101")  # its id stored, ended
    stuck = _job(store, submitting=1)  # sbatch handed it over, no id stored: recovery reads its record
    retried = _job(store, attempt=2, submitting=1)  # attempt 1 is history, attempt 2 is in flight
    lost = _job(store, submitting=0)  # a lost attempt waiting to be launched again under the same key
    running = _job(store, state="RUNNING", backend_id="202")
    settled = _attempt_files(root, f"fd-{done}.1") + _attempt_files(root, f"fd-{retried}.1")
    kept = _attempt_files(root, f"fd-{stuck}.1") + _attempt_files(root, f"fd-{retried}.2")
    fresh = _attempt_files(root, f"fd-{lost}.1", mtime=time.time())  # written just now: a new launch, kept
    gone = _attempt_files(root, "fd-999999.1")  # no such job (its row gone): nothing will look for it
    ids = root / "slurm-ids"
    ended = [_file(ids / "101", "/x"), _file(ids / "101.cancelled")]
    ids_kept = [_file(ids / "202", "/x"), _file(ids / "303", "/x")]  # running; no row yet (a day's grace)
    orphan = _file(ids / "404_2", "/x", mtime=time.time() - 2 * sweep.STALE_S)
    swept = _pass(root, db)
    assert not any(p.exists() for p in settled + gone + ended + [orphan])
    assert all(p.exists() for p in kept + fresh + ids_kept)
    assert swept.removed == 3 + 3  # three attempt units, three id files (101, 101.cancelled, 404_2)
    assert _pass(root, db).removed == 0  # nothing more to do: the second pass removes nothing
    store.update_job(running, state="COMPLETED")
    assert _pass(root, db).removed == 1 and not (ids / "202").exists()


def test_an_array_keeps_its_record_table_and_links_until_every_task_is_settled(
    home: tuple[Path, Path, JobStore],
) -> None:
    root, db, store = home
    first, second, third = (_job(store, submitting=0, backend_id=f"900_{i}") for i in range(3))
    store.update_job(third, submitting=1, backend_id=None)  # a crash mid hand-over: its id not stored yet
    keys = [f"fd-{j}.1" for j in (first, second, third)]
    files = _attempt_files(root, keys[0])
    files.append(_file(root / "slurm-arrays" / f"{keys[0]}.json", json.dumps(dict(enumerate(keys)))))
    links = [_link(root, k, keys[0]) for k in keys[1:]]
    _pass(root, db)
    assert all(p.exists() for p in files) and links[1].is_symlink()  # the third task's way back stays
    assert not links[0].is_symlink()  # the second is settled: its own link is no longer needed
    store.update_job(third, submitting=0, backend_id="900_2")
    _pass(root, db)
    assert not any(p.exists() for p in files) and not links[1].is_symlink()


def test_a_pass_reads_a_bounded_number_of_entries(home: tuple[Path, Path, JobStore]) -> None:
    """20,000 stale records (jobs long gone) and one live one: each pass reads at most `budget` entries of a
    folder and removes at most that many; the stale ones go in 20,000 / budget passes, the live one stays."""
    root, db, store = home
    live = _job(store, submitting=1)
    folder = root / "slurm-ids" / "submitted"
    folder.mkdir(parents=True)
    for i in range(20_000):
        (folder / f"fd-{10**6 + i}.1").touch()
        os.utime(folder / f"fd-{10**6 + i}.1", (OLD, OLD))
    _attempt_files(root, f"fd-{live}.1")
    budget, passes = 1000, 0
    while len(os.listdir(folder)) > 1:
        swept = _pass(root, db, budget)
        passes += 1
        assert swept.examined <= 5 * budget and swept.removed <= budget  # five folders, `budget` each at most
        assert passes <= 21
    assert os.listdir(folder) == [f"fd-{live}.1"] and launch_path(root, f"fd-{live}.1").exists()


def test_half_written_files_a_crash_left_go_once_a_day_old(home: tuple[Path, Path, JobStore]) -> None:
    root, db, _ = home
    day = time.time() - 2 * sweep.STALE_S
    old = [_file(launch_path(root, ".fd-1.1.tmp"), "{", day), _file(record_path(root, ".fd-2.1.found"), "8", day)]
    old.append(_file(root / "slurm-arrays" / "fd-3.1.tmp", "{", day))
    young = _file(launch_path(root, ".fd-4.1.tmp"), "{")  # an hour old: kept for now
    assert _pass(root, db).removed == 3
    assert not any(p.exists() for p in old) and young.exists()
