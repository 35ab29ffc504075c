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
