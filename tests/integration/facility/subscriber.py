"""Run as a test user: a facility subscription (frontdesk.facility_subscribe) that prints each push as a JSON line
and exits after `n` of them (or 60 s). argv: SOCKET HOME N [URL] (the URL is used while SOCKET does not exist)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from frontdesk.facility_subscribe import Subscription


async def main(socket: str, home: str, n: int, url: str | None) -> int:
    got: asyncio.Queue[list[str]] = asyncio.Queue()

    def push(ids: Sequence[str]) -> None:
        got.put_nowait(list(ids))

    sub = Subscription(Path(socket), Path(home), push, url).start()
    try:
        async with asyncio.timeout(60):
            for _ in range(n):
                print(json.dumps(await got.get()), flush=True)
    except TimeoutError:
        return 1
    finally:
        await sub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), (sys.argv[4:] or [None])[0])))
