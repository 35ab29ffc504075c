"""The one request head and the one answer parser every hand-rolled client shares (frontdesk.wire)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.wire import CutOff, parse_answer, request_head


def _chunked(body: bytes, size: int) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def _answer(status: int, body: bytes, chunk: int | None) -> bytes:
    if chunk is None:
        head = f"HTTP/1.1 {status} OK\r\ncontent-length: {len(body)}\r\ncontent-type: application/json\r\n\r\n"
        return head.encode() + body
    head = f"HTTP/1.1 {status} OK\r\ntransfer-encoding: chunked\r\n\r\n"
    return head.encode() + _chunked(body, chunk)


@given(st.sampled_from([200, 404, 503]), st.binary(max_size=300), st.one_of(st.none(), st.integers(1, 64)))
def test_a_whole_answer_reads_back(status: int, body: bytes, chunk: int | None) -> None:
    got = parse_answer(_answer(status, body, chunk))
    assert (got.status, got.body) == (status, body)


@given(st.binary(min_size=1, max_size=300), st.one_of(st.none(), st.integers(1, 64)), st.data())
def test_an_answer_cut_anywhere_in_its_body_is_no_answer(body: bytes, chunk: int | None, data: st.DataObject) -> None:
    raw = _answer(200, body, chunk)
    start = raw.index(b"\r\n\r\n") + 4
    cut = data.draw(st.integers(start, len(raw) - 1))
    with pytest.raises(CutOff):
        parse_answer(raw[:cut])


def test_the_length_is_named_when_a_sized_body_is_cut() -> None:
    with pytest.raises(CutOff, match=r"cut off mid-body \(3 of 10 bytes\)"):
        parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")


@pytest.mark.parametrize("raw", [b"", b"garbage\r\n\r\n", b"HTTP/1.1 abc\r\n\r\n", b"HTTP/1.1 200 OK\r\n"])
def test_what_is_not_an_answer(raw: bytes) -> None:
    with pytest.raises(CutOff):
        parse_answer(raw)


def test_request_heads() -> None:
    assert request_head("POST", "/v1/jobs", 12, json_body=True) == (
        b"POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nConnection: close\r\n"
        b"Content-Length: 12\r\nContent-Type: application/json\r\n\r\n"
    )
    assert request_head("GET", "/v1/x", auth="Bearer t", http10=True, accept="text/event-stream") == (
        b"GET /v1/x HTTP/1.0\r\nHost: localhost\r\nAccept: text/event-stream\r\nAuthorization: Bearer t\r\n\r\n"
    )
