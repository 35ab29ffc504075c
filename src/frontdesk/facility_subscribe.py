"""A per-user gateway's subscription to the facility gateway's Slurm job ends (docs/facility.md, "Push").

On a site whose config says `[gateway] mode = "facility"`, Slurm's EpilogSlurmctld tells the facility gateway
only; a user's own gateway on the Slurm backend opens `GET /v1/facility/slurm-events` on the facility's Unix
socket (the kernel says who it is: it receives its own user's job ends, nobody else's) and turns each event
into a push hint (an immediate re-query of those ids). It checks the socket before it connects and the
listener after (root, the site's service user or itself), keeps the last event id it handled in
`<home>/facility-cursor.json` and resumes from it after either side restarts (the facility stores events
before it sends them), reconnecting with a backoff of 0.2 s doubling to 5 s. On a host without the socket
(the facility runs elsewhere), it uses the site's `url` over TCP, signed with a fresh MUNGE credential per
connection, when the site says `munge = true`: inside TLS (`https://`, checked against `[gateway] tls_ca`),
or in plain text to a loopback address only (frontdesk.tls). The tick stays the safety net.
Stdlib only: the backends import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontdesk.errors import ConfigError, FrontdeskError
from frontdesk.paths import FACILITY_SOCKET, check_listener, check_rendezvous, site_gateway, trusted_uids
from frontdesk.tasks import cancel_and_wait
from frontdesk.wire import request_head

__all__ = ["CURSOR_FILE", "FacilityTarget", "Subscription", "facility_target"]

log = logging.getLogger("frontdesk.facility")

CURSOR_FILE = "facility-cursor.json"
PATH = "/v1/facility/slurm-events"
MAX_BACKOFF_S = 5.0
SILENCE_S = 45.0
"""A stream quiet for this long (the facility sends a keep-alive every 15 s) is taken as dead."""


@dataclass(frozen=True)
class FacilityTarget:
    """Where the facility gateway is: its Unix socket, and its URL when the site signs TCP with MUNGE."""

    socket: Path
    url: str | None = None


def facility_target(mode: str, own_socket: Path) -> FacilityTarget | None:
    """The facility gateway a per-user gateway subscribes to (the site config's), None when there is none."""
    if mode == "facility":
        return None
    site = site_gateway()
    if site.get("mode") != "facility":
        return None
    path = Path(str(site.get("socket") or FACILITY_SOCKET))
    if path == own_socket:
        return None
    url = site.get("url") if site.get("munge") is True else None
    return FacilityTarget(path, str(url) if isinstance(url, str) and url.startswith(("http://", "https://")) else None)


class Subscription:
    """One subscription; `start()` runs it as a task until `stop()`."""

    def __init__(self, socket: Path, home: Path, push: Callable[[Sequence[str]], None], url: str | None = None) -> None:
        self.socket = socket
        self.url = url
        """Used (TCP, signed with a fresh MUNGE credential) while the socket does not exist on this host."""
        self.cursor_file = home / CURSOR_FILE
        self.push = push
        self.cursor = self._load()
        self.received = 0
        """Events handled since start (live or replayed)."""
        self._task: asyncio.Task[None] | None = None

    # -- the cursor ---------------------------------------------------------------------------------------
    def _load(self) -> int | None:
        try:
            saved = json.loads(self.cursor_file.read_text())
        except (OSError, ValueError):
            return None
        ok = isinstance(saved, dict) and saved.get("socket") == str(self.socket)
        seq = saved.get("seq") if ok else None
        return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0 else None

    def _save(self, seq: int) -> None:
        self.cursor = seq
        tmp = self.cursor_file.with_name(f".{CURSOR_FILE}.{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps({"socket": str(self.socket), "seq": seq}))
            os.replace(tmp, self.cursor_file)
        except OSError as exc:
            log.warning("cannot keep the facility cursor in %s: %s", self.cursor_file, exc)

    # -- life cycle ---------------------------------------------------------------------------------------
    def start(self) -> Subscription:
        """Run the subscription in the background (reconnecting until stopped)."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="facility-subscription")
        return self

    async def stop(self) -> None:
        """End the subscription (the cursor is already on disk)."""
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        backoff = 0.2
        log.info("subscribing to Slurm job ends at the facility gateway %s (from seq %s)", self.socket, self.cursor)
        while True:
            try:
                if await self._once():
                    backoff = 0.2  # it was connected: the next try comes soon
            except ConfigError as exc:  # (a credential that would go in plain text, a CA that cannot be read)
                log.warning("facility subscription %s: %s; retrying in %.1f s", self.socket, exc, backoff)
            except (OSError, EOFError, TimeoutError, ValueError, FrontdeskError) as exc:
                log.info("facility subscription %s: %s; retrying in %.1f s", self.socket, exc, backoff)
            except Exception:  # never let the subscription die: the gateway would fall back to its tick silently
                log.exception("facility subscription %s failed; retrying in %.1f s", self.socket, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _connect(self, target: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
        """The Unix socket (checked before and after connecting), else TCP with MUNGE (a credential for `target`).

        (reader, writer, the Authorization header's value or "")."""
        if self.url is None or os.path.lexists(self.socket):
            trusted = trusted_uids()
            check_rendezvous(self.socket, trusted)  # a squatted socket gets nothing, not even our uid
            reader, writer = await asyncio.open_unix_connection(str(self.socket))
            try:
                check_listener(writer.get_extra_info("socket"), self.socket, trusted)
            except FrontdeskError:
                writer.close()
                raise
            return reader, writer, ""
        from frontdesk.identity import munge_credential
        from frontdesk.tls import client_ca, client_context, endpoint, refuse_plaintext
        from frontdesk.wire import request_binding

        where = endpoint(self.url)
        refuse_plaintext(where, "MUNGE credential")  # https://, or this machine's loopback
        tls = client_context(client_ca()) if where.tls else None
        binding = request_binding("GET", target, b"")  # good for this request only, once (munged refuses replays)
        cred = await asyncio.to_thread(munge_credential, binding)
        reader, writer = await asyncio.open_connection(
            where.host, where.port, ssl=tls, server_hostname=where.host if tls else None
        )
        return reader, writer, f"MUNGE {cred}"

    async def _once(self) -> bool:
        """One connection: check, connect, stream until it ends. True when the stream was open."""
        query = "" if self.cursor is None else f"?since={self.cursor}"
        reader, writer, auth = await self._connect(PATH + query)
        try:
            head = request_head("GET", PATH + query, auth=auth or None, accept="text/event-stream", http10=True)
            writer.write(head)
            await writer.drain()
            status = await _head(reader)
            if status != 200:
                raise ValueError(f"the facility gateway answered HTTP {status}")
            async for fields in _messages(reader):
                self._handle(fields)
            return True
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _handle(self, fields: dict[str, str]) -> None:
        seq = int(fields.get("id", "-1"))
        if fields.get("event") == "head":
            if self.cursor is None:  # a first subscription starts at the facility's journal head
                self._save(seq)
            where = self.socket if self.url is None or os.path.lexists(self.socket) else self.url
            log.info("facility subscription open at %s (journal head %d, cursor %s)", where, seq, self.cursor)
            return
        event: Any = json.loads(fields.get("data", "{}"))
        if not isinstance(event, dict) or event.get("kind") != "slurm.ended" or seq < 0:
            return
        ids = event.get("data", {}).get("slurm_ids")
        if not isinstance(ids, list):
            return
        ids = [str(i) for i in ids]
        log.info("facility push: Slurm job(s) %s ended (seq %d)", ",".join(ids), seq)
        self.push(ids)
        self.received += 1
        self._save(seq)


async def _head(reader: asyncio.StreamReader) -> int:
    """Read the status line and headers; the status code."""
    async with asyncio.timeout(SILENCE_S):
        line = await reader.readline()
        parts = line.split()
        if len(parts) < 2 or not parts[1].isdigit():
            raise EOFError("no HTTP answer")
        while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
            if header.lower().startswith(b"transfer-encoding:") and b"chunked" in header.lower():
                raise ValueError("a chunked answer to an HTTP/1.0 request")
    return int(parts[1])


async def _messages(reader: asyncio.StreamReader) -> AsyncIterator[dict[str, str]]:
    """Server-sent events: each message's fields (`id`, `event`, `data`); comments (keep-alives) skipped."""
    fields: dict[str, str] = {}
    while True:
        async with asyncio.timeout(SILENCE_S):
            raw = await reader.readline()
        if not raw:
            return  # the facility gateway went away: reconnect from the cursor
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if fields:
                yield fields
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
