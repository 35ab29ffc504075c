"""The thin client: one request to the user's own gateway over its Unix socket, with no json, socket, re,
argparse or typing module imported (each costs a fresh process a millisecond or more).

The commands agents call in a loop (cli/fast.py) and the harness hooks (agents/hooks.py) run as a fresh process
per call; they send here what client.Client sends (the request and the answer's framing are frontdesk.wire's),
after the same rendezvous checks, and decode the answer with the C halves of json. Anything this does not do
as the full client would raises Fallback before a byte is sent where it can: the caller then runs its full path.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "SESSION_CHARS",
    "Broken",
    "Fallback",
    "NotOk",
    "connect",
    "dumps",
    "loads",
    "parse_json",
    "request",
    "socket_path",
]

SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")
"""A session id sent as it is (anything else goes the full client's way)."""


class Fallback(Exception):
    """Let the full path answer (the full CLI, the full hook handler)."""


class NotOk(Fallback):
    """The gateway answered, but not with HTTP 200 (status and body kept: a wait must not be asked twice)."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(status)
        self.status, self.body = status, body


class Broken(Exception):
    """An HTTP 200 cut off or not JSON: the full client's one-line error here (asking again could differ)."""


def socket_path() -> str:
    """The user's own gateway socket (paths.socket_path_from_env), or Fallback where the full client differs."""
    env = os.environ
    if env.get("FRONTDESK_URL") or env.get("FRONTDESK_TOKEN_FILE"):
        raise Fallback
    if os.path.isfile(env.get("FRONTDESK_SITE_CONFIG") or "/etc/frontdesk/frontdesk.toml"):
        raise Fallback  # the site's [gateway] table decides: the full client reads it
    if env.get("FRONTDESK_SOCKET"):
        return env["FRONTDESK_SOCKET"]
    if env.get("FRONTDESK_HOME"):
        return os.path.join(env["FRONTDESK_HOME"], "run", "gateway.sock")
    xdg = env.get("XDG_RUNTIME_DIR")
    return os.path.join(xdg, "frontdesk", "gateway.sock") if xdg else f"/tmp/frontdesk-{os.getuid()}/gateway.sock"


def dumps(data: Any) -> str:
    """json.dumps(data, sort_keys=True, default=str), from the C encoder json itself uses."""
    import _json

    encode = _json.make_encoder({}, str, _json.encode_basestring_ascii, None, ": ", ", ", True, False, True)
    return "".join(encode(data, 0))


class _Decoder:
    """What _json's scanner reads from json.JSONDecoder()."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


def loads(raw: bytes) -> Any:
    """json.loads of a whole answer; Fallback on anything it would not take."""
    import _json

    try:
        text = raw.decode()
        obj, end = _json.make_scanner(_Decoder())(text, 0)  # type: ignore[arg-type]
    except Exception:  # (the C scanner's own errors need json.decoder, not imported: SystemError)
        raise Fallback from None
    if text[end:].strip(" \t\n\r"):
        raise Fallback
    return obj


def request(path: str, method: str, url: str, body: str | None, timeout: float) -> Any:
    """One request as client.Client sends it (frontdesk.wire); the decoded answer of an HTTP 200, else NotOk
    (any other status, carrying the answer) or Fallback."""
    from frontdesk.wire import BadHead, CutOff, parse_answer, request_head

    data = b"" if body is None else body.encode()
    sock = connect(path, timeout)
    try:
        sock.sendall(request_head(method, url, len(data), json_body=body is not None) + data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except OSError:
        raise Fallback from None
    finally:
        sock.close()
    raw = b"".join(chunks)
    try:
        answer = parse_answer(raw)
    except BadHead:
        raise Fallback from None
    except CutOff as exc:
        if raw.startswith((b"HTTP/1.1 200 ", b"HTTP/1.0 200 ")):
            raise Broken(f"the gateway went away mid-answer: {exc}") from None
        raise Fallback from None
    if answer.status != 200:
        raise NotOk(answer.status, answer.body)
    if not answer.body:
        raise Fallback  # (the full client makes None of it)
    try:
        return loads(answer.body)
    except Fallback:
        raise Broken("the gateway sent a broken answer (HTTP 200)") from None


def connect(path: str, timeout: float) -> Any:
    """A connected socket after paths.check_rendezvous and check_listener passed, else Fallback (nothing sent)."""
    import _socket

    from frontdesk.rendezvous import refusal

    trusted = (os.getuid(), 0)  # paths.trusted_uids() without a site config (with one, the full client runs)
    try:
        if refusal(path, trusted) is not None:
            raise Fallback
    except OSError:
        raise Fallback from None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        if int.from_bytes(raw[4:8], sys.byteorder, signed=True) not in trusted:
            raise Fallback
    except OSError:
        sock.close()
        raise Fallback from None
    except BaseException:
        sock.close()
        raise
    return sock


def parse_json(text: str) -> Any:
    """json.loads(text), from the C scanner: what json.loads answers, and its error (json is imported for that)."""
    import _json

    if not isinstance(text, str):  # (bytes, or not text at all: json.loads decides)
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        obj, end = _json.make_scanner(_Decoder())(text, start)  # type: ignore[arg-type]
        if not text[end:].strip(" \t\n\r"):
            return obj
    except RecursionError:
        raise
    except Exception:  # (the scanner's own errors need json.decoder: json.loads says what is wrong)
        pass
    import json

    return json.loads(text)
