"""The end-notice channel (backends/local/ends.py) over real sockets and real sender processes: only the
attempt's own shepherd, of our uid, is heard; anything else is counted and dropped."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from frontdesk.backends.local.ends import MAX_NOTICE, EndNotices, usable_path
from frontdesk.backends.shepherd import _send_end

SHEPHERD_SEND = "import sys; from frontdesk.backends.shepherd import _send_end; sys.exit(not _send_end(*sys.argv[1:]))"
T = TypeVar("T")
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
RAW_SEND = (
    "import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(sys.argv[2].encode(), sys.argv[1])"
)


@pytest.fixture
def where() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fd-ends-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


class _Channel:
    """An EndNotices on a running loop, with the shepherd pids it knows and the notices it took."""

    def __init__(self, path: Path) -> None:
        self.shepherds: dict[str, int] = {}
        self.heard: list[str] = []
        self.ends = EndNotices(path, self.shepherds.get, self.heard.append)

    async def send(self, bid: str, code: str = SHEPHERD_SEND, as_bid: str | None = None, **kw: Any) -> int:
        """Send `bid` from a fresh process, registered first as the shepherd of `as_bid` (default: bid)."""
        python = sys.executable if code == SHEPHERD_SEND else SYSTEM_PYTHON  # another uid may not enter ours
        proc = subprocess.Popen([python, "-c", code, str(self.ends.path), bid], **kw)
        self.shepherds[as_bid if as_bid is not None else bid] = proc.pid
        assert await asyncio.to_thread(proc.wait) == 0
        return int(proc.pid)

    async def settled(self, total: int) -> None:
        """Until `total` datagrams were read (taken or dropped)."""
        for _ in range(2000):
            if self.ends.received + self.ends.dropped >= total:
                return
            await asyncio.sleep(0.005)
        raise AssertionError(f"only {self.ends.received} + {self.ends.dropped} of {total} datagrams read")


def test_the_attempts_own_shepherd_is_heard(where: Path) -> None:
    async def go() -> _Channel:
        ch = _Channel(where / "ends.sock")
        assert ch.ends.open(asyncio.get_running_loop())
        await ch.send("7.1")
        await ch.settled(1)
        ch.ends.close()
        return ch

    ch = run(go())
    assert (ch.heard, ch.ends.received, ch.ends.dropped) == (["7.1"], 1, 0)


BURST_SEND = """
import os, sys, time
from frontdesk.backends import shepherd
shepherd.NOTICE_WAIT_SECONDS = 60.0  # the test decides how long the gateway stays busy
path, bid, ready, go, done = sys.argv[1:]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
ok = shepherd._send_end(path, bid)
open(done, "w").close()
sys.exit(not ok)
"""


def _queue_length() -> int:
    try:
        return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text())
    except (OSError, ValueError):
        return 10


def test_a_burst_beyond_the_kernels_queue_waits_for_room_and_is_heard_in_full(where: Path) -> None:
    qlen = _queue_length()
    n = min(qlen + 15, 60)

    def done() -> int:
        return len(list(where.glob("done-*")))

    async def go() -> tuple[_Channel, list[int], int]:
        ch = _Channel(where / "ends.sock")
        assert ch.ends.open(asyncio.get_running_loop())
        procs = []
        for i in range(n):
            args = [str(ch.ends.path), f"{i}.1", str(where / f"ready-{i}"), str(where / "go"), str(where / f"done-{i}")]
            procs.append(subprocess.Popen([sys.executable, "-c", BURST_SEND, *args]))
            ch.shepherds[f"{i}.1"] = procs[-1].pid
        while len(list(where.glob("ready-*"))) < n:
            await asyncio.sleep(0.01)
        (where / "go").touch()
        # The gateway's loop is busy (this thread does not return to it): the kernel queues qlen notices and the
        # other senders wait for room. Until qlen are sent and nothing more for a while, or n (no wait at all).
        seen, quiet_since = -1, time.monotonic()
        while time.monotonic() - quiet_since < 0.3 and done() < n:
            if done() != seen:
                seen, quiet_since = done(), time.monotonic()
            time.sleep(0.01)
        while_busy = done()
        codes = [await asyncio.to_thread(p.wait) for p in procs]
        await ch.settled(n)
        ch.ends.close()
        return ch, codes, while_busy

    ch, codes, while_busy = run(go())
    assert codes == [0] * n, "a shepherd gave up on the channel (it would fall back to HTTP)"
    assert (ch.ends.received, ch.ends.dropped, sorted(ch.heard)) == (n, 0, sorted(f"{i}.1" for i in range(n)))
    if qlen + 1 < n:  # the kernel queues one more than max_dgram_qlen
        assert while_busy <= qlen + 1, "more notices went through than the kernel queues: nobody waited"


def test_the_socket_is_owner_only_and_removed_at_close(where: Path) -> None:
    async def go() -> None:
        ends = EndNotices(where / "ends.sock", lambda bid: None, lambda bid: None)
        (where / "ends.sock").write_text("stale")  # a killed gateway's leftover is replaced
        assert ends.open(asyncio.get_running_loop()) and ends.bound
        mode = os.stat(where / "ends.sock").st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        ends.close()
        assert not (where / "ends.sock").exists() and not ends.bound

    run(go())
    assert _send_end(str(where / "ends.sock"), "7.1") is False  # no gateway: the shepherd falls back


def test_a_notice_from_another_process_than_the_shepherd_is_dropped(where: Path) -> None:
    async def go() -> _Channel:
        ch = _Channel(where / "ends.sock")
        assert ch.ends.open(asyncio.get_running_loop())
        ch.shepherds["7.1"] = os.getpid()  # the attempt's shepherd is someone else
        await ch.send("7.1", as_bid="8.1")  # a live process of ours, but not 7.1's shepherd
        await ch.send("9.1", as_bid="10.1")  # an attempt with no shepherd here
        await ch.settled(2)
        ch.ends.close()
        return ch

    ch = run(go())
    assert (ch.heard, ch.ends.received, ch.ends.dropped) == ([], 0, 2)


def test_malformed_notices_are_dropped(where: Path) -> None:
    async def go() -> _Channel:
        ch = _Channel(where / "ends.sock")
        assert ch.ends.open(asyncio.get_running_loop())
        await ch.send("7" * (MAX_NOTICE + 1), code=RAW_SEND)
        await ch.send("7.1\u00e9", code=RAW_SEND)
        await ch.settled(2)
        ch.ends.close()
        return ch

    ch = run(go())
    assert (ch.heard, ch.ends.dropped) == ([], 2)


@pytest.mark.skipif(os.geteuid() != 0, reason="sending as another uid needs root")
def test_a_notice_from_another_uid_is_dropped(where: Path) -> None:
    async def go() -> _Channel:
        ch = _Channel(where / "ends.sock")
        assert ch.ends.open(asyncio.get_running_loop())
        os.chmod(where, 0o755)
        os.chmod(where / "ends.sock", 0o666)  # only the credential check stands in the way now
        await ch.send("7.1", code=RAW_SEND, user=65534, group=65534, cwd="/")
        await ch.settled(1)
        ch.ends.close()
        return ch

    ch = run(go())
    assert (ch.heard, ch.ends.received, ch.ends.dropped) == ([], 0, 1)


def test_a_path_too_long_for_a_socket_means_no_channel(where: Path) -> None:
    deep = where / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert not usable_path(deep / "ends.sock") and usable_path(where / "ends.sock")

    async def go() -> bool:
        ends = EndNotices(deep / "ends.sock", lambda bid: None, lambda bid: None)
        return ends.open(asyncio.get_running_loop()) or ends.bound

    assert run(go()) is False


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)
