"""The gateway's storage workers: one long-lived child per caller identity, which runs as that caller.

A root (facility) gateway starts `frontdesk.storage.worker` as root with the caller's uid/gid; the worker
drops to them (and the user's supplementary groups) before it reads a question. A per-user gateway runs its
worker as itself and serves only its own user. Questions to one worker are serialised (its cache is not
shared between threads); different callers run in parallel.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field

from frontdesk.errors import BackendError, Forbidden

__all__ = ["Identity", "Workers"]


@dataclass(frozen=True)
class Identity:
    """Whom a worker runs as."""

    uid: int
    gid: int
    user: str


@dataclass
class _Worker:
    proc: asyncio.subprocess.Process
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    used: float = field(default_factory=time.monotonic)


@dataclass
class Workers:
    timeout_s: float = 120.0
    inotify: bool = True
    idle_s: float = 600.0
    """A worker unused this long ends (its cache and inotify watches go; the user's groups are read anew)."""
    max_workers: int = 256
    _workers: dict[Identity, _Worker] = field(default_factory=dict)

    def check(self, who: Identity) -> None:
        """A non-root gateway may serve only its own uid (it could not become anyone else)."""
        if os.geteuid() != 0 and who.uid != os.geteuid():
            raise Forbidden(f"this gateway runs as uid {os.geteuid()} and cannot read files as {who.user}")

    async def _start(self, who: Identity) -> _Worker:
        if len(self._workers) >= self.max_workers:
            _, old = self._workers.popitem()
            await self._end(old)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-P", "-m", "frontdesk.storage.worker",
            "--uid", str(who.uid), "--gid", str(who.gid), "--user", who.user,
            *(() if self.inotify else ("--no-inotify",)),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, cwd="/",
            limit=256 * 1024 * 1024,
        )  # fmt: skip
        worker = self._workers[who] = _Worker(proc)
        return worker

    async def ask(self, who: Identity, question: dict[str, object]) -> dict[str, object]:
        """The worker's answer (a Result as JSON, or an error payload)."""
        self.check(who)
        await self._reap(time.monotonic())
        worker = self._workers.get(who)
        if worker is None or worker.proc.returncode is not None:
            worker = await self._start(who)
        async with worker.lock:
            worker.used = time.monotonic()
            assert worker.proc.stdin is not None and worker.proc.stdout is not None
            try:
                worker.proc.stdin.write(json.dumps(question).encode() + b"\n")
                await worker.proc.stdin.drain()
                line = await asyncio.wait_for(worker.proc.stdout.readline(), self.timeout_s)
            except (TimeoutError, OSError, ValueError) as exc:
                self._workers.pop(who, None)
                await self._end(worker)
                raise BackendError(f"storage operator for {who.user} failed: {exc or 'ran past the timeout'}") from None
        if not line:
            self._workers.pop(who, None)
            raise BackendError(f"storage worker for {who.user} ended (exit {await worker.proc.wait()})")
        answer: dict[str, object] = json.loads(line)
        return answer

    async def _reap(self, now: float) -> None:
        for who, worker in list(self._workers.items()):
            if now - worker.used > self.idle_s and not worker.lock.locked():
                self._workers.pop(who, None)
                await self._end(worker)

    async def _end(self, worker: _Worker) -> None:
        if worker.proc.returncode is None:
            worker.proc.kill()
            await worker.proc.wait()

    async def close(self) -> None:
        while self._workers:
            _, worker = self._workers.popitem()
            await self._end(worker)
