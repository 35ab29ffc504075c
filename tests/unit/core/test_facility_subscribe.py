"""facility_subscribe.py: which facility a per-user gateway subscribes to, the cursor, and the event stream parser."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Sequence
from pathlib import Path

import pytest

from frontdesk.errors import ConfigError
from frontdesk.facility_subscribe import CURSOR_FILE, FacilityTarget, Subscription, _messages, facility_target


def _site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    site = tmp_path / "site.toml"
    site.write_text(text)
    monkeypatch.setenv("FRONTDESK_SITE_CONFIG", str(site))


def test_the_target_is_the_sites_facility_socket_and_its_url_only_with_munge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "me.sock"
    _site(tmp_path, monkeypatch, '[gateway]\nmode = "facility"\nsocket = "/run/fd/gw.sock"\nurl = "http://svc:8765"\n')
    assert facility_target("user", own) == FacilityTarget(Path("/run/fd/gw.sock"), None)
    assert facility_target("facility", own) is None  # the facility gateway subscribes to nobody
    assert facility_target("user", Path("/run/fd/gw.sock")) is None  # nor does a gateway to itself
    _site(tmp_path, monkeypatch, '[gateway]\nmode = "facility"\nsocket = "/s"\nurl = "http://svc:8765"\nmunge = true\n')
    assert facility_target("user", own) == FacilityTarget(Path("/s"), "http://svc:8765")
    _site(tmp_path, monkeypatch, '[gateway]\nmode = "facility"\nsocket = "/s"\nurl = "https://svc"\nmunge = true\n')
    assert facility_target("user", own) == FacilityTarget(Path("/s"), "https://svc")  # TLS (frontdesk.tls)
    _site(tmp_path, monkeypatch, '[gateway]\nmode = "facility"\nsocket = "/s"\nurl = "ftp://svc"\nmunge = true\n')
    assert facility_target("user", own) == FacilityTarget(Path("/s"), None)
    _site(tmp_path, monkeypatch, '[gateway]\nmode = "user"\n')
    assert facility_target("user", own) is None


def _events(sub: Subscription, messages: list[dict[str, str]]) -> None:
    for fields in messages:
        sub._handle(fields)


def test_the_cursor_starts_at_the_head_once_then_follows_handled_events(tmp_path: Path) -> None:
    pushed: list[Sequence[str]] = []
    sub = Subscription(tmp_path / "f.sock", tmp_path, pushed.append)
    assert sub.cursor is None
    event = {"kind": "slurm.ended", "data": {"slurm_ids": ["12", "13_1"]}}
    _events(
        sub,
        [
            {"event": "head", "id": "40"},
            {"id": "41", "data": json.dumps(event)},
            {"id": "42", "data": json.dumps({"kind": "job.state", "data": {}})},  # not a Slurm end: skipped
            {"id": "43", "data": json.dumps(["not", "an", "object"])},
            {"event": "head", "id": "99"},  # a later head (a reconnection) never moves a cursor it has
        ],
    )
    assert pushed == [["12", "13_1"]] and sub.cursor == 41
    saved = tmp_path / CURSOR_FILE
    assert json.loads(saved.read_text()) == {"socket": str(tmp_path / "f.sock"), "seq": 41}
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert Subscription(tmp_path / "f.sock", tmp_path, pushed.append).cursor == 41  # after a restart
    assert Subscription(tmp_path / "other.sock", tmp_path, pushed.append).cursor is None  # another facility's


@pytest.mark.parametrize("text", ["", "{", '{"socket": "/x", "seq": -1}', '{"socket": "/x", "seq": true}', "[]"])
def test_a_bad_cursor_file_counts_as_none(tmp_path: Path, text: str) -> None:
    (tmp_path / CURSOR_FILE).write_text(text)
    assert Subscription(Path("/x"), tmp_path, print).cursor is None


def test_the_stream_parser_skips_comments_and_splits_messages() -> None:
    async def parse(raw: bytes) -> list[dict[str, str]]:
        reader = asyncio.StreamReader()
        reader.feed_data(raw)
        reader.feed_eof()
        return [m async for m in _messages(reader)]

    raw = b'event: head\r\nid: 7\r\ndata: {}\r\n\r\n: keep-alive\n\nid: 8\ndata: {"a": 1}\n\nid: 9\n'
    assert asyncio.run(parse(raw)) == [{"event": "head", "id": "7", "data": "{}"}, {"id": "8", "data": '{"a": 1}'}]


def test_no_munge_credential_goes_in_plain_text_off_loopback(tmp_path: Path) -> None:
    """Over http:// to another host the subscription refuses before it makes a credential or connects."""
    sub = Subscription(tmp_path / "absent.sock", tmp_path, lambda ids: None, url="http://192.0.2.1:8765")
    with pytest.raises(ConfigError, match="MUNGE credential in plain text"):
        asyncio.run(sub._connect("/v1/facility/slurm-events"))
