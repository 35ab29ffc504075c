"""How the Slurm backend talks to the controller: one runner for every command, one shared job table."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from frontdesk import proc
from frontdesk.backends.runas import RunAs, keyctl_number, umask_of
from frontdesk.backends.slurm import parse
from frontdesk.errors import BackendError

if TYPE_CHECKING:
    from frontdesk.backends.slurm.config import SlurmConfig

__all__ = ["JobTable", "MIN_INTERVAL", "Runner"]

MIN_INTERVAL = 0.5
"""Seconds between two full-table queries: a storm of cancels or pushes costs two queries a second at most."""


@dataclass
class _Snapshot:
    records: dict[str, parse.JobRecord] = field(default_factory=dict)
    as_of: float = 0.0


class JobTable:
    """A single-flight, time-bounded snapshot of `scontrol -o show job` shared by every caller."""

    def __init__(self, runner: Runner) -> None:
        self._run = runner
        self._snap = _Snapshot()
        self._lock = asyncio.Lock()
        self.queries = 0
        """Real controller queries made (for tests and the bench)."""

    def last(self) -> tuple[dict[str, parse.JobRecord], float]:
        """The latest snapshot, however old (served with a note while the controller does not answer)."""
        return self._snap.records, self._snap.as_of

    async def fetch(self, max_age: float = 0.0) -> tuple[dict[str, parse.JobRecord], float]:
        """Records by Slurm id, at most `max_age` seconds old; concurrent callers share one query."""
        asked = time.time()
        async with self._lock:
            if self._snap.as_of >= asked - max_age:
                return self._snap.records, self._snap.as_of
            # at most one query per MIN_INTERVAL: whoever asks meanwhile waits for it and shares it
            await asyncio.sleep(max(0.0, self._snap.as_of + MIN_INTERVAL - time.time()))
            started = time.time()
            result = await self._run(["scontrol", "-o", "show", "job"])
            self.queries += 1
            records, suspect = await asyncio.to_thread(_by_id, result.stdout)  # 10k jobs in ~0.5 s: off the loop
            for bid in sorted(suspect)[:MAX_ASKED_ALONE]:
                await self._ask_alone(bid, records)
            self._snap = _Snapshot(records, started)
            return records, started

    async def _ask_alone(self, bid: str, records: dict[str, parse.JobRecord]) -> None:
        """Job `bid`'s record from `scontrol -o show job ID`, where no other job's text can pose as it."""
        if not _PLAIN_ID.fullmatch(bid):
            return
        try:
            result = await self._run(["scontrol", "-o", "show", "job", bid], check=False)
        except BackendError:  # timed out: the job stays out of this snapshot, the next asks again
            return
        alone, suspect = parse.checked_jobs(result.stdout)
        for record in alone:
            if record.get("JobId") == bid and bid not in suspect:
                records[bid] = record


MAX_ASKED_ALONE = 8
"""Suspect records (a JobId on two lines, a record cut by a newline) asked again one by one, per query."""
_PLAIN_ID = re.compile(r"[0-9]{1,12}")


def _by_id(text: str) -> tuple[dict[str, parse.JobRecord], set[str]]:
    records, suspect = parse.checked_jobs(text)
    return {r["JobId"]: r for r in records}, suspect


class Runner:
    """Runs one Slurm command through frontdesk.proc with the site's SLURM_CONF and bin dir.

    Times are forced to ISO (`SLURM_TIME_FORMAT=standard`): a site's or user's format would corrupt them."""

    def __init__(self, config: SlurmConfig) -> None:
        self._config = config
        self._env: dict[str, str] = {**os.environ, "SLURM_TIME_FORMAT": "standard"}
        if config.conf:
            self._env["SLURM_CONF"] = config.conf
        self.calls: Counter[str] = Counter()
        """Commands run, by name (`scontrol show`, `sbatch`...): each is at least one controller RPC."""

    def argv(self, argv: Sequence[str]) -> list[str]:
        if self._config.bin_dir:
            return [str(Path(self._config.bin_dir) / argv[0]), *argv[1:]]
        return list(argv)

    async def __call__(
        self,
        argv: Sequence[str],
        check: bool = True,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        record: Path | None = None,
        started: Callable[[int], None] | None = None,
        who: RunAs | None = None,
        input: str | None = None,
    ) -> proc.Result:
        """Run one command; `env` replaces the gateway's environment (the binary is found on the gateway's PATH);
        `record`: its output goes into that file, kept should the gateway die first (sbatch's job id);
        `started(pid)`: called before the command runs (proc.run; sbatch's launch record). With `env`, the command
        runs with the submitter's umask it names (`FRONTDESK_UMASK`): sbatch hands the job its own, never our root's.
        `who` (another user, from a root gateway): the command runs as them, entering `cwd` as them; `input`: its
        stdin (sbatch's script)."""
        full = self.argv(argv)
        self.calls[" ".join(argv[:2]) if argv[0] == "scontrol" else argv[0]] += 1
        if env is not None:
            full[0] = shutil.which(full[0]) or full[0]
        run_env = self._env if env is None else env
        timeout = self._config.command_timeout
        mask = umask_of(dict(env)) if env is not None else None
        as_user = None
        if who is not None and who.foreign:
            as_user = proc.AsUser(who.uid, who.gid, who.groups, cwd or "/", keyctl_number())
        return await proc.run_async(
            full, timeout=timeout, check=check, env=run_env, cwd=cwd, stdout_file=record, started=started,
            umask=-1 if mask is None else mask, input=input, as_user=as_user,
        )  # fmt: skip

    def sync(self, argv: Sequence[str], check: bool = True) -> proc.Result:
        self.calls[" ".join(argv[:2]) if argv[0] == "scontrol" else argv[0]] += 1
        return proc.run(self.argv(argv), timeout=self._config.command_timeout, check=check, env=self._env)
