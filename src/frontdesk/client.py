"""The thin client of the gateway: stdlib HTTP over the Unix socket (or TCP with a bearer token or MUNGE: inside
TLS for an `https://` URL; a credential goes in plain text only to a loopback address, see frontdesk.tls).

Used by the CLI, the hooks, the shims and the MCP server. Imports only the stdlib and frontdesk.errors,
so a fresh process that talks to the gateway starts in a few tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

from frontdesk.errors import Forbidden, FrontdeskError, GatewayGone, GatewayUnavailable, UserError, from_payload
from frontdesk.wire import request_head

MAX_WAIT_S = 7 * 86400
MAX_URL_BYTES = 8192
"""Longest path and query a request sends: uvicorn refuses a request head over 16 KiB with a bare 400."""
"""The longest wait a gateway takes (POST /v1/wait's bound)."""
RESEND_FOR_S = 30.0
"""How long a submission whose gateway went away before answering is sent again (`Client.resend_on_gone`)."""
TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Client", "connect"]


def _early_answer(sock: socket.socket) -> _Response | None:
    """The answer a gateway sent before it stopped reading our request (a body over its cap), if any."""
    try:
        sock.settimeout(5.0)
        return _Response(sock)
    except (OSError, ValueError):
        return None


class _Response:
    """A minimal HTTP/1.1 response reader (Content-Length or chunked bodies) over one socket.

    The stdlib's http.client pulls in the email package (~25 ms of a fresh process); the gateway speaks
    plain HTTP/1.1 with JSON bodies and, for event streams, chunked server-sent events, so this is enough.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")
        line = self.file.readline(65537)
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise OSError("not an HTTP answer")
        self.status = int(parts[1])
        self.headers: dict[str, str] = {}
        while True:
            h = self.file.readline(65537)
            if h in (b"\r\n", b"\n", b""):
                break
            key, _, value = h.decode("latin-1").partition(":")
            self.headers[key.strip().lower()] = value.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self._left = int(self.headers.get("content-length", "-1"))
        self._buf = b""

    def _chunk(self) -> bytes:
        size = int(self.file.readline(1024).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            self.file.readline(1024)
            return b""
        data = self.file.read(size)
        self.file.readline(1024)
        return data

    def _chunk_strict(self) -> bytes:
        line = self.file.readline(1024)
        if not line.endswith(b"\n"):
            raise OSError("the answer was cut off mid-body")
        size = int(line.split(b";")[0].strip() or b"0", 16)
        data = self.file.read(size) if size else b""
        if len(data) < size or not self.file.readline(1024).endswith(b"\n"):
            raise OSError("the answer was cut off mid-body")
        return data

    def read(self) -> bytes:
        """The whole body; OSError when the connection ends before the body does (a 200 cut off is no answer)."""
        if self.chunked:
            out = [self._buf]
            while chunk := self._chunk_strict():
                out.append(chunk)
            return b"".join(out)
        if self._left >= 0:
            data = self.file.read(self._left)
            if len(data) < self._left:
                raise OSError(f"the answer was cut off mid-body ({len(data)} of {self._left} bytes)")
            return data
        return self.file.read()

    def readline(self) -> bytes:
        """One line of a streamed body (b"" at its end)."""
        if not self.chunked:
            return self.file.readline()
        while b"\n" not in self._buf:
            chunk = self._chunk()
            if not chunk:
                line, self._buf = self._buf, b""
                return line
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class Client:
    """Talks to one gateway; every method raises a FrontdeskError subclass on failure."""

    def __init__(
        self,
        socket_path: str | Path | None = None,
        url: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        autostart: bool = True,
    ) -> None:
        """`autostart=False`: never start the user's gateway when none answers (see frontdesk.autostart)."""
        from frontdesk.paths import socket_path_from_env

        self.url = url or os.environ.get("FRONTDESK_URL") or None
        self.socket_path = str(socket_path or socket_path_from_env())
        self.token = token or os.environ.get("FRONTDESK_TOKEN") or _token_file() or None
        self.munge = os.environ.get("FRONTDESK_AUTH", "").lower() == "munge"
        self.timeout = timeout
        self.autostart = autostart
        if not (self.url or socket_path or os.environ.get("FRONTDESK_SOCKET")):
            self._site_url()

    def _site_url(self) -> None:
        """On a node without the facility socket (a compute node), the site's `[gateway] url`, with MUNGE."""
        from frontdesk.paths import site_gateway

        site = site_gateway()
        if site.get("mode") == "facility" and site.get("url") and not os.path.exists(self.socket_path):
            self.url = str(site["url"])
            self.munge = self.munge or (site.get("munge") is True and not self.token)

    def _where(self) -> str:
        return self.url or self.socket_path

    def _connect(self, timeout: float | None) -> socket.socket:
        if self.url:  # TCP: inside TLS for https:// (frontdesk.tls), checked, never downgraded
            from frontdesk.tls import connect, endpoint

            return connect(endpoint(self.url), timeout)
        from frontdesk.paths import check_listener, check_rendezvous, trusted_uids

        trusted = trusted_uids()
        check_rendezvous(self.socket_path, trusted)  # a squatter's directory or socket: refuse, send nothing
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            try:
                sock.connect(self.socket_path)
            except (FileNotFoundError, ConnectionRefusedError):
                from frontdesk.autostart import start_if_allowed

                if not (self.autostart and start_if_allowed(self.socket_path)):  # zero setup: started once
                    raise
                sock.connect(self.socket_path)
            check_listener(sock, self.socket_path, trusted)
        except BaseException:
            sock.close()
            raise
        return sock

    def _open(self, method: str, path: str, body: Any, timeout: float | None) -> _Response:
        data = b"" if body is None else json.dumps(body).encode()
        auth = None
        if self.url and (self.munge or self.token):  # on the Unix socket the kernel says who we are
            from frontdesk.tls import endpoint, refuse_plaintext

            refuse_plaintext(endpoint(self.url), "MUNGE credential" if self.munge else "bearer token")
        if self.url and self.munge:
            from frontdesk.identity import munge_credential
            from frontdesk.wire import request_binding

            auth = f"MUNGE {munge_credential(request_binding(method, path, data))}"
        elif self.token and self.url:
            auth = f"Bearer {self.token}"
        head = request_head(method, path, len(data), json_body=body is not None, auth=auth)
        sock = self._connect(timeout)
        try:
            sock.sendall(head + data)
            return _Response(sock)
        except TimeoutError:  # connected: the gateway may have read the request, and acted on it
            sock.close()
            raise GatewayGone(f"gateway at {self._where()} did not answer in time") from None
        except (OSError, ValueError) as exc:
            answered = _early_answer(sock)  # a 413 sent before the body was read, then the socket closed
            if answered is not None:
                return answered
            sock.close()
            raise GatewayGone(f"the gateway at {self._where()} went away before answering: {exc}") from None
        except BaseException:
            sock.close()
            raise

    def _send(self, method: str, path: str, body: Any, timeout: float | None) -> _Response:
        try:
            return self._open(method, path, body, timeout)
        except FrontdeskError:
            raise
        except FileNotFoundError:
            raise GatewayUnavailable(
                f"no gateway socket at {self._where()} (start one with `frontdesk serve`)"
            ) from None
        except ConnectionRefusedError:
            raise GatewayUnavailable(f"gateway at {self._where()} refused the connection (is it running?)") from None
        except TimeoutError:
            raise GatewayUnavailable(f"gateway at {self._where()} did not answer in time") from None
        except PermissionError:  # another user's per-user gateway: a permission failure (77), not an outage
            raise Forbidden(
                f"permission denied on the gateway socket {self._where()}: it serves another user"
            ) from None
        except (OSError, ValueError) as exc:
            raise GatewayUnavailable(f"cannot reach the gateway at {self._where()}: {exc}") from None

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """One request; the decoded JSON answer, or the gateway's error raised as a FrontdeskError."""
        if len(path) > MAX_URL_BYTES:  # the server refuses a longer request line with a bare 400
            raise UserError(f"{method} {path.split('?', 1)[0]}: a query of {len(path)} bytes; at most {MAX_URL_BYTES}")
        resp = self._send(method, path, body, timeout if timeout is not None else self.timeout)
        try:
            raw = resp.read()
        except (OSError, ValueError) as exc:
            raise GatewayGone(f"the gateway went away mid-answer: {exc}") from None
        finally:
            resp.close()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            if resp.status < 300:  # a success whose body does not parse is a broken answer, not a result
                raise GatewayUnavailable(f"the gateway sent a broken answer (HTTP {resp.status})") from None
            said = raw[:200].decode(errors="replace").strip().splitlines()[0] if raw.strip() else ""
            raise FrontdeskError(f"gateway sent a non-JSON answer (HTTP {resp.status}): {said!r}") from None
        if resp.status >= 400:
            if isinstance(payload, dict) and "error" in payload:
                raise from_payload(payload)
            detail = payload.get("detail") if isinstance(payload, dict) else None
            raise FrontdeskError(f"gateway answered HTTP {resp.status}: {detail or raw[:200]!r}")
        return payload

    # -- jobs -----------------------------------------------------------------------------------
    def submit(
        self,
        spec: dict[str, Any] | None = None,
        spec_text: str | None = None,
        fmt: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Submit a spec (as data or as YAML/JSON text); the job record (with `warnings`)."""
        body: dict[str, Any] = {"context": dict(context or {})}
        if "env" not in body["context"]:  # every client's jobs get the submitter's environment
            from frontdesk.jobenv import capture_env

            body["context"]["env"] = capture_env()
        if spec is not None:
            body["spec"] = spec
        else:
            body["spec_text"] = spec_text
            body["format"] = fmt
        body["context"].setdefault("request_id", os.urandom(12).hex())
        result: dict[str, Any] = self.resend_on_gone("POST", "/v1/jobs", body)
        return result

    def resend_on_gone(self, method: str, path: str, body: Any) -> Any:
        """A request the gateway recognises when it comes again (a submission's request id): when the gateway
        went away after it was sent (killed before answering, a restart), it is sent again, with backoff, until
        a gateway answers or `RESEND_FOR_S` have passed, so the caller learns what became of it instead of
        retrying by hand and making a second job. A gateway that was never reached fails at once, as before."""
        import time

        deadline, delay = 0.0, 0.2
        while True:
            try:
                return self.request(method, path, body)
            except GatewayUnavailable as exc:
                if not deadline:
                    if not isinstance(exc, GatewayGone):
                        raise
                    deadline = time.monotonic() + RESEND_FOR_S
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def job(self, job_id: int | str) -> dict[str, Any]:
        """One job's record."""
        result: dict[str, Any] = self.request("GET", f"/v1/jobs/{_jid(job_id)}")
        return result

    def jobs(self, **filters: Any) -> list[dict[str, Any]]:
        """Jobs matching filters (state, session, principal, name, limit, active)."""
        query = urlencode({k: v for k, v in filters.items() if v is not None}, doseq=True)
        result: list[dict[str, Any]] = self.request("GET", "/v1/jobs" + (f"?{query}" if query else ""))
        return result

    def cancel(self, job_id: int | str) -> dict[str, Any]:
        """Cancel a job (and its process tree)."""
        result: dict[str, Any] = self.request("POST", f"/v1/jobs/{_jid(job_id)}/cancel", {})
        return result

    def report(self, job_id: int | str) -> dict[str, Any]:
        """The stored report of an ended job."""
        result: dict[str, Any] = self.request("GET", f"/v1/jobs/{_jid(job_id)}/report")
        return result

    def logs(self, job_id: int | str, tail: int = 50, stream: str = "stdout") -> dict[str, Any]:
        """The last `tail` lines of a job's stdout or stderr (secrets redacted)."""
        q = urlencode({"tail": tail, "stream": stream})
        result: dict[str, Any] = self.request("GET", f"/v1/jobs/{_jid(job_id)}/logs?{q}")
        return result

    def wait(self, ids: list[int | str], mode: str = "all", timeout: float | None = None) -> dict[str, Any]:
        """Block on the gateway until any/all jobs end; {"done", "reports", "pending"}."""
        if timeout is not None and not 0 <= timeout <= MAX_WAIT_S:  # NaN fails both; inf is no socket timeout
            raise UserError(f"timeout: expected seconds from 0 to {MAX_WAIT_S}, got {timeout!r}")
        body = {"ids": [_jid(i) for i in ids], "mode": mode, "timeout": timeout}
        http_timeout = None if timeout is None else timeout + 30
        result: dict[str, Any] = self.request("POST", "/v1/wait", body, timeout=http_timeout or 10**7)
        return result

    def events(self, since: int = 0, follow: bool = False, job: int | None = None) -> Iterator[dict[str, Any]]:
        """Events after `since`; with follow, a server-sent stream that never ends by itself."""
        q = {"since": since, "follow": "true" if follow else "false"}
        if job is not None:
            q["job"] = job
        resp = self._send("GET", f"/v1/events?{urlencode(q)}", None, None if follow else self.timeout)
        try:
            if resp.status >= 400:
                payload = json.loads(resp.read() or b"{}")
                raise from_payload(payload) if "error" in payload else FrontdeskError(f"HTTP {resp.status}")
            if not follow:
                yield from json.loads(resp.read())
                return
            while True:
                try:
                    line = resp.readline()
                except (OSError, ValueError):
                    line = b""
                if not line:
                    raise GatewayUnavailable("the gateway closed the event stream")
                if line.startswith(b"data:"):
                    yield json.loads(line[5:])
        finally:
            resp.close()

    def health(self) -> dict[str, Any]:
        """The gateway's liveness answer."""
        result: dict[str, Any] = self.request("GET", "/v1/health", timeout=5)
        return result


def _token_file() -> str | None:
    """The token in FRONTDESK_TOKEN_FILE (a 0600 file of the user's), never one from the command line."""
    name = os.environ.get("FRONTDESK_TOKEN_FILE")
    if not name:
        return None
    try:
        st = os.stat(name)
        if st.st_mode & 0o077:
            raise GatewayUnavailable(f"FRONTDESK_TOKEN_FILE {name} is readable by others: chmod 600 it")
        with open(name) as fh:
            return fh.read().strip() or None
    except OSError as exc:
        raise GatewayUnavailable(f"FRONTDESK_TOKEN_FILE {name}: {exc.strerror}") from None


def _jid(job_id: int | str) -> int:
    from frontdesk.errors import UserError

    text = str(job_id).strip()
    if not text.isdigit():
        raise UserError(f"not a job id: {job_id!r} (expected a number such as 12)")
    return int(text)


def connect(**kwargs: Any) -> Client:
    """A Client configured from the environment (FRONTDESK_SOCKET, FRONTDESK_URL, FRONTDESK_TOKEN)."""
    return Client(**kwargs)
