"""Finding a gateway's Slurm attempts again after a crash mid-submit: by job name, comment tag or array table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from frontdesk.backends.slurm import render
from frontdesk.backends.slurm.array_submit import ARRAY_TAG, array_keys

if TYPE_CHECKING:
    from frontdesk.backends.slurm.backend import SlurmBackend

__all__ = ["lookup"]


async def lookup(backend: SlurmBackend, keys: Sequence[str], owners: Mapping[str, int] | None = None) -> dict[str, str]:
    """Slurm ids of attempts by job name (= BackendJob.key), comment tag or array table, from one query.

    A name, a comment and an output path are whatever a job's submitter wrote (`sbatch --comment fd-5.1@...`):
    with `owners` (each key's uid), a job of another user is never taken for ours. Before, after a crash
    mid-submit, a root gateway adopted any user's job tagged like a stuck attempt as that attempt."""
    records, _ = await backend.table.fetch(0.0)
    if owners is not None:
        records = {bid: r for bid, r in records.items() if _uid(r.get("UserId", "")) in set(owners.values())}
    wanted = set(keys)
    out: dict[str, str] = {}
    home_path = Path(backend.settings.home)
    home = str(home_path).rstrip("/") + "/"
    suffix = "@" + backend._tag_suffix()
    for bid in sorted(records, key=lambda b: int(b) if b.isdigit() else 0):
        name = records[bid].get("JobName", "")
        words = records[bid].get("Comment", "").split()
        comment = words[-1] if words else ""  # the tag is the last word (after a user's own comment)
        if comment.endswith(ARRAY_TAG + suffix):
            out.update(_array_lookup(home_path, records[bid], comment[: -len(ARRAY_TAG + suffix)], wanted))
            continue
        if comment.endswith(suffix) and comment[: -len(suffix)] in wanted:
            out[comment[: -len(suffix)]] = bid  # a job from the sbatch shim keeps the user's name
            continue
        # another gateway's attempt may have the same key: only ours write under our home
        if name in wanted and records[bid].get("StdOut", "").startswith(home):
            out[name] = bid
            stdout = records[bid].get("StdOut", "")
            if stdout.endswith("/" + render.STDOUT_FILE):
                backend._dirs.setdefault(bid, Path(stdout).parent)
    if owners is not None:
        out = {k: bid for k, bid in out.items() if k in owners and _owner_is(records, bid, owners[k])}
    rest = [k for k in keys if k not in out]
    if rest and backend._accounting:
        argv = [
            "sacct",
            "--parsable2",
            "--noheader",
            "-X",
            "--starttime=now-7days",
            "--name",
            ",".join(rest),
            "--format=JobIDRaw,JobName,WorkDir,UID",
        ]
        res = await backend._run(argv, check=False)
        for line in res.stdout.split("\n"):  # U+2028 in a name is no line break
            bid, name, workdir, uid = (line.split("|") + ["", "", ""])[:4]
            if owners is not None and (not uid.isdigit() or owners.get(name) != int(uid)):
                continue
            if name in rest and bid.isdigit() and (workdir + "/").startswith(home):
                out[name] = bid
    return out


def _array_lookup(home: Path, record: Mapping[str, str], first_key: str, wanted: set[str]) -> dict[str, str]:
    """Task ids of an array of ours from its key table (written before its sbatch ran)."""
    array = record.get("ArrayJobId", "")
    if not array.isdigit():
        return {}
    keys = array_keys(home, first_key)
    return {key: f"{array}_{index}" for index, key in keys.items() if key in wanted}


def _uid(user_id: str) -> int | None:
    """The uid in scontrol's `UserId=alice(1001)`."""
    inside = user_id.rpartition("(")[2].rstrip(")")
    return int(inside) if inside.isdigit() else None


def _owner_is(records: Mapping[str, Mapping[str, str]], bid: str, uid: int) -> bool:
    """Whether Slurm job `bid` (or the array task's job) runs as `uid`."""
    record = records.get(bid) or records.get(bid.split("_", 1)[0]) or {}
    if not record:  # an array task id: its array's record
        record = next((r for r in records.values() if r.get("ArrayJobId") == bid.split("_", 1)[0]), {})
    return _uid(record.get("UserId", "")) == uid
