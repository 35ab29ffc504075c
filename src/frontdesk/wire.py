"""The gateway's wire format as bytes, for every hand-rolled client: one request head, one answer parser.

The CLI's client (client.py), its fast path (cli/fast.py), the shims, the shepherd's notify and a user's
gateway subscribing to the facility all speak plain HTTP/1.x over a Unix socket (or TCP) without http.client,
which would pull ssl and email into a fresh process. They share these two functions, so the request they send
and the way an answer is read (a 200 cut off mid-body is no answer) are written once. Stdlib-free and pure:
importing this costs nothing on the hot path; each caller keeps its own socket.
"""

from __future__ import annotations

__all__ = ["Answer", "BadHead", "CutOff", "parse_answer", "request_binding", "request_head"]

CUT = "the answer was cut off mid-body"


class CutOff(Exception):
    """The answer ended before its body did (or its framing does not parse): the message says how."""


class BadHead(CutOff):
    """Not an HTTP answer's head at all (no status line, a Content-Length that is not a number)."""


class Answer:
    """A whole answer read off the wire: status, lower-cased headers, the body (de-chunked)."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def _on_the_wire(path: str) -> str:
    """The path as a valid request target: a space, a control character (CR LF: a second, injected request), `#`
    or a non-ASCII letter percent-encoded (a session id from a hook payload may hold any); `%` and the URL's
    own punctuation are kept, so a caller's encoding stays as it is."""
    if path.isascii() and path.isprintable() and " " not in path and "#" not in path:
        return path
    from urllib.parse import quote

    return quote(path, safe="/?&=%:@!$'()*+,;~-._[]")


def request_binding(method: str, target: str, body: bytes) -> str:
    """What a MUNGE credential carries over TCP: the one request it is for (method, target as sent, the body's
    SHA-256). The gateway takes the credential for exactly that request, so one seen on its way is no key to
    anything else of its user's (identity.munge_credential, api/auth.py)."""
    import hashlib

    return f"frontdesk/1 {method} {_on_the_wire(target)} sha256:{hashlib.sha256(body).hexdigest()}"


def request_head(
    method: str,
    path: str,
    length: int | None = None,
    *,
    json_body: bool = False,
    auth: str | None = None,
    accept: str = "application/json",
    http10: bool = False,
    host: str = "localhost",
) -> bytes:
    """The request line and headers, ending with the blank line; `length` is the body's (None: no body).

    HTTP/1.1 requests ask the gateway to close the connection after the answer, so reading to the end of the
    stream reads exactly one answer; HTTP/1.0 (the shims, the facility stream) never gets a chunked answer."""
    path = _on_the_wire(path)
    lines = [f"{method} {path} HTTP/1.0" if http10 else f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines.append(f"Accept: {accept}")
    if not http10:
        lines.append("Connection: close")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if json_body:
        lines.append("Content-Type: application/json")
    if auth:
        lines.append(f"Authorization: {auth}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def parse_answer(raw: bytes) -> Answer:
    """The answer in `raw` (everything read until the gateway closed); CutOff when it is not a whole one."""
    head_end = raw.find(b"\r\n\r\n")
    if head_end < 0 or not raw.startswith(b"HTTP/"):
        raise BadHead("not an HTTP answer")
    lines = raw[:head_end].split(b"\r\n")
    parts = lines[0].split(None, 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise BadHead("not an HTTP answer")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    rest = raw[head_end + 4 :]
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(int(parts[1]), headers, _dechunk(rest))
    length = headers.get("content-length", "").strip()
    if not length:
        return Answer(int(parts[1]), headers, rest)
    if not length.isdigit():
        raise BadHead(f"a bad Content-Length ({length[:20]!r})")
    n = int(length)
    if len(rest) < n:
        raise CutOff(f"{CUT} ({len(rest)} of {n} bytes)")
    return Answer(int(parts[1]), headers, rest[:n])


def _dechunk(rest: bytes) -> bytes:
    out: list[bytes] = []
    while True:
        line, sep, rest = rest.partition(b"\n")
        if not sep:
            raise CutOff(CUT)
        try:
            size = int(line.split(b";")[0].strip() or b"0", 16)
        except ValueError as exc:
            raise CutOff(str(exc)) from None
        data, rest = rest[:size], rest[size:]
        _, sep, rest = rest.partition(b"\n")
        if len(data) < size or not sep:
            raise CutOff(CUT)
        if not size:
            return b"".join(out)
        out.append(data)
