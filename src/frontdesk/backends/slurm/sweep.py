"""The bounded sweep of the Slurm backend's crash-recovery files: each one deleted once nothing can need it.

What needs each file (recovery.py reads them for attempts stuck mid-submit: their id not stored):
- `slurm-ids/submitted/<key>` (sbatch's answer) and `slurm-ids/launches/<key>` (launches.py): attempt `key`
  while it is stuck, and for an array's first task, every task its key table lists while one of them is;
- `slurm-arrays/<first>.json` (the key table): every task it lists; `slurm-arrays/of/<key>`: attempt `key`;
- `slurm-ids/<slurm id>` (the job's folder, for its usage file once the controller forgot it) and
  `<slurm id>.cancelled`: the job holding that id until it ended; an id no job holds, for a day;
- a half-written file a crash left (`.<key>.tmp`): nothing; deleted a day old.
`settled(keys)` (the database) says which attempts are no longer stuck: their id stored, a later attempt made,
or no such job. A unit is deleted only when every key it serves is settled AND each of its files is older than
the moment before that question (less a margin for the file clock): a new launch of a settled key (a lost
attempt launched again under the same key) writes its files after, under `launches.LOCK`, which the check and
the delete of one unit hold too. So a crash anywhere leaves at most files a later pass deletes, never a live
attempt without its record (tests/faults/test_record_sweep_kill.py).

A pass reads at most `budget` entries of each folder (scandir, no listing of the whole folder, no sort): 100,000
stale files cost a start nothing (the pass runs in a worker thread) and go `budget` a folder a pass.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from frontdesk import faults
from frontdesk.backends.slurm import arrays
from frontdesk.backends.slurm.array_submit import array_keys
from frontdesk.backends.slurm.launches import LAUNCHES, LOCK

__all__ = ["BUDGET", "Ended", "Settled", "Swept", "sweep"]

BUDGET = 2000
"""Entries read per folder per pass."""
MARGIN_S = 2.0
"""File times come from a coarse clock: a file written just after the question may look a little older."""
STALE_S = 86400.0
"""An id file no job holds (a retried attempt's, an id never stored) is kept this long."""
KEY = re.compile(r"fd-[0-9]{1,19}\.[0-9]{1,9}")

Settled = Callable[[Collection[str]], set[str]]
"""Which of these attempt keys are settled (their id stored, a later attempt, or no such job)."""
Ended = Callable[[Collection[str]], dict[str, bool]]
"""Slurm id -> whether the job holding it ended; an id no job holds is left out."""


@dataclass
class Swept:
    """What one pass did."""

    examined: int = 0
    removed: int = 0


def _names(folder: Path, budget: int, swept: Swept) -> list[str]:
    out: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if len(out) >= budget:
                    break
                out.append(entry.name)
    except OSError:
        return []
    swept.examined += len(out)
    return out


def _table(path: Path) -> set[str]:
    return set(array_keys(path.parent.parent, path.name.removesuffix(".json")).values())


def sweep(home: Path, settled: Settled, ended: Ended, budget: int = BUDGET, now: float | None = None) -> Swept:
    """One bounded pass over the record folders under `home`; what it read and deleted."""
    swept = Swept()
    cutoff = (time.time() if now is None else now) - MARGIN_S  # before the database is asked
    ids, arr = home / "slurm-ids", home / "slurm-arrays"
    units: list[tuple[list[Path], set[str]]] = []  # (files, the keys they serve)
    sub, lau, arr_names = (_names(d, budget, swept) for d in (ids / "submitted", ids / LAUNCHES, arr))
    for folder, names in ((ids / "submitted", sub), (ids / LAUNCHES, lau), (arr, arr_names)):
        swept.removed += _leftovers(folder, names, cutoff)
    for key in filter(KEY.fullmatch, {*sub, *lau}):
        table = _table(arr / f"{key}.json")
        units.append(([ids / "submitted" / key, ids / LAUNCHES / key], {key, *table}))
    for name in arr_names:
        if name.endswith(".json") and KEY.fullmatch(name.removesuffix(".json")):
            units.append(([arr / name], {name.removesuffix(".json"), *_table(arr / name)}))
    units += [([arr / "of" / n], {n}) for n in _names(arr / "of", budget, swept) if KEY.fullmatch(n)]
    done = settled({k for _, served in units for k in served}) if units else set()
    faults.point("records_settled")  # the database asked, nothing deleted (tests/faults)
    for files, served in units:
        if served <= done:
            swept.removed += _remove(files, cutoff)
    swept.removed += _sweep_ids(ids, ended, cutoff, budget, swept)
    return swept


def _remove(files: list[Path], cutoff: float) -> int:
    """Delete one unit's files if each is older than `cutoff` (else a new launch wrote it: keep them all)."""
    with LOCK:
        times = []
        for path in files:
            try:
                times.append(path.lstat().st_mtime)
            except OSError:
                continue
        if not times or max(times) >= cutoff:
            return 0
        for path in files:
            path.unlink(missing_ok=True)
    faults.point("record_removed")  # one unit gone (tests/faults)
    return 1


def _leftovers(folder: Path, names: list[str], cutoff: float) -> int:
    """Half-written files a crash left (`.<key>.tmp`, `.<key>.found`, `<key>.tmp`), a day old: nothing reads them."""
    removed = 0
    for name in names:
        path = folder / name
        try:
            if name.startswith(".") or name.endswith(".tmp"):
                st = path.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff - STALE_S:
                    path.unlink()
                    removed += 1
        except OSError:
            continue
    return removed


def _sweep_ids(ids: Path, ended: Ended, cutoff: float, budget: int, swept: Swept) -> int:
    names = [n for n in _names(ids, budget, swept) if _slurm_id(n.removesuffix(".cancelled"))]
    if not names:
        return 0
    over = ended({n.removesuffix(".cancelled") for n in names})
    removed = 0
    for name in names:
        done = over.get(name.removesuffix(".cancelled"))
        try:
            if done or (done is None and (ids / name).lstat().st_mtime < cutoff - STALE_S):
                (ids / name).unlink()
                removed += 1
        except OSError:
            continue
    return removed


def _slurm_id(name: str) -> bool:
    return (name.isascii() and name.isdigit()) or arrays.split_task_id(name) is not None
