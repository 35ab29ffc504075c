"""The operators' whole-file read: regular files only past the first chunk, and never more than the cap."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from frontdesk.storage import readall as fs


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return fs._read_all(fd, 1 << 16)
    finally:
        os.close(fd)


def test_a_file_over_the_cap_is_an_error_and_one_at_the_cap_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs, "MAX_READ_BYTES", 1 << 20)
    at, over = tmp_path / "at", tmp_path / "over"
    at.write_bytes(b"x" * (1 << 20))
    over.write_bytes(b"x" * ((1 << 20) + 1))
    assert len(_read(str(at))) == 1 << 20
    with pytest.raises(OSError) as exc:
        _read(str(over))
    assert exc.value.errno == errno.EFBIG


def test_an_endless_device_is_refused_and_small_files_and_null_are_read(tmp_path: Path) -> None:
    with pytest.raises(OSError) as exc:
        _read("/dev/zero")
    assert exc.value.errno == errno.EINVAL
    assert _read("/dev/null") == b""
    small = tmp_path / "s"
    small.write_bytes(b"abc")
    assert _read(str(small)) == b"abc"
