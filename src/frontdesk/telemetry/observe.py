"""The observe loop: tick at a fixed rate, store what is new, stop on a deadline or SIGTERM/SIGINT."""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from frontdesk.errors import UserError
from frontdesk.telemetry.sampler import Sampler
from frontdesk.telemetry.store import ObserveStore

__all__ = ["MAX_HZ", "ObserveResult", "observe"]

MAX_HZ = 5.0
"""The paper's rate; more costs CPU on a shared login node for little gain."""


@dataclass(frozen=True)
class ObserveResult:
    """What one run did."""

    db: str
    ticks: int
    recorded: int
    excluded: int
    seconds: float
    cpu_percent: float
    """The observer's CPU time over the run, as a percentage of one core."""


def observe(out: Path, hz: float, duration: float | None, stop: threading.Event | None = None) -> ObserveResult:
    """Sample until `duration` seconds have passed (None: until SIGTERM/SIGINT or `stop`)."""
    from frontdesk.guard.secrets import redact

    if not 0 < hz <= MAX_HZ:
        raise UserError(f"--hz must be in (0, {MAX_HZ:g}], got {hz:g}")
    if duration is not None and duration <= 0:
        raise UserError(f"--duration must be positive, got {duration:g}")
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        store = ObserveStore(out)
    except Exception as exc:  # sqlite3.Error or OSError: one line, not a traceback
        raise UserError(f"cannot open {out}: {exc}") from exc
    sampler = Sampler(redact)
    t0, c0 = time.monotonic(), time.process_time()
    run = store.start_run(sampler.host, time.time(), hz)
    period = 1.0 / hz
    try:
        next_at = t0
        while not stop.is_set():
            store.add(sampler.tick())
            if duration is not None and time.monotonic() - t0 >= duration:
                break
            next_at += period
            stop.wait(max(0.0, next_at - time.monotonic()))
    except KeyboardInterrupt:
        pass
    finally:
        seconds, cpu = time.monotonic() - t0, time.process_time() - c0
        store.end_run(run, time.time(), sampler.stats, cpu)
        store.close()
    return ObserveResult(
        str(out), sampler.stats.ticks, sampler.stats.recorded, sampler.stats.excluded, round(seconds, 2),
        round(100.0 * cpu / seconds, 3) if seconds else 0.0,
    )  # fmt: skip
