"""The authenticated channel between a gateway and a storage agent: JSON lines over TCP, signed with a shared key.

A request is `{"ts", "nonce", "body", "mac"}` with `mac = HMAC-SHA256(key, canonical(ts, nonce, body))`; the
agent refuses a bad MAC, a timestamp more than `WINDOW_S` away from its clock and a nonce it has seen in that
window (a replayed request). The answer is `{"answer", "mac"}`, its MAC bound to the request's nonce, so a
gateway never takes an answer that was not made for its question. The key is 32+ random bytes in a file only
its owner can read (`head -c 32 /dev/urandom > storage.key; chmod 600 storage.key`), the same on both sides.
There is no encryption: run it on the site's management network or inside a TLS tunnel (see docs/storage.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import time
from pathlib import Path

from frontdesk.errors import ConfigError, Unauthenticated

__all__ = ["WINDOW_S", "Replay", "load_key", "open_answer", "open_request", "seal_answer", "seal_request"]

WINDOW_S = 30.0


def load_key(path: str | Path) -> bytes:
    """The shared key; refused when the file is readable by anyone but its owner or shorter than 32 bytes."""
    p = Path(path)
    try:
        st = p.stat()
        key = p.read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"storage agent key {p}: {exc.strerror or exc}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or st.st_uid != os.geteuid():
        raise ConfigError(f"storage agent key {p} must belong to uid {os.geteuid()} with mode 0600 or 0400")
    if len(key) < 32:
        raise ConfigError(f"storage agent key {p} is shorter than 32 bytes (head -c 32 /dev/urandom > {p})")
    return key


def _canon(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _mac(key: bytes, *parts: object) -> str:
    return hmac.new(key, _canon(list(parts)), hashlib.sha256).hexdigest()


def seal_request(key: bytes, body: dict[str, object], now: float | None = None) -> tuple[bytes, str]:
    """The request line for `body`, and its nonce (to check the answer with)."""
    ts, nonce = time.time() if now is None else now, secrets.token_hex(16)
    line = _canon({"ts": ts, "nonce": nonce, "body": body, "mac": _mac(key, ts, nonce, body)})
    return line + b"\n", nonce


class Replay:
    """Nonces seen within the window (the agent's memory against replayed requests)."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    def fresh(self, nonce: str, now: float) -> bool:
        for old in [n for n, t in self._seen.items() if t < now - 2 * WINDOW_S]:
            del self._seen[old]
        if nonce in self._seen:
            return False
        self._seen[nonce] = now
        return True


def open_request(key: bytes, line: bytes, replay: Replay, now: float | None = None) -> tuple[dict[str, object], str]:
    """The verified body of a request line and its nonce; Unauthenticated otherwise (no detail leaks)."""
    now = time.time() if now is None else now
    try:
        msg = json.loads(line)
        ts, nonce, body, mac = msg["ts"], msg["nonce"], msg["body"], msg["mac"]
    except (ValueError, KeyError, TypeError):
        raise Unauthenticated("storage agent: malformed request") from None
    if not isinstance(mac, str) or not isinstance(nonce, str) or not isinstance(body, dict):
        raise Unauthenticated("storage agent: malformed request")
    if not isinstance(ts, int | float) or not hmac.compare_digest(mac, _mac(key, ts, nonce, body)):
        raise Unauthenticated("storage agent: bad signature (not the site's key)")
    if abs(now - ts) > WINDOW_S:
        raise Unauthenticated(f"storage agent: request timestamp {now - ts:+.0f} s off (clocks, or a replay)")
    if not replay.fresh(nonce, now):
        raise Unauthenticated("storage agent: replayed request")
    return body, nonce


def seal_answer(key: bytes, nonce: str, answer: dict[str, object]) -> bytes:
    return _canon({"answer": answer, "mac": _mac(key, nonce, answer)}) + b"\n"


def open_answer(key: bytes, nonce: str, line: bytes) -> dict[str, object]:
    """The verified answer to the request with `nonce`; Unauthenticated otherwise."""
    try:
        msg = json.loads(line)
        answer, mac = msg["answer"], msg["mac"]
    except (ValueError, KeyError, TypeError):
        refusal = _refusal(line)
        raise Unauthenticated(refusal or "storage agent: malformed answer") from None
    if (
        not isinstance(answer, dict)
        or not isinstance(mac, str)
        or not hmac.compare_digest(mac, _mac(key, nonce, answer))
    ):
        raise Unauthenticated("storage agent: answer not signed with the site's key")
    return answer


def _refusal(line: bytes) -> str | None:
    """The agent's own (unsigned) refusal line, when that is what came back."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return f"refused: {msg.get('message')}" if isinstance(msg, dict) and msg.get("error") == "unauthenticated" else None
