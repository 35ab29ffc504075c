"""Landlock, for real, in a child process: writes outside the allowed dirs fail with EACCES."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from frontdesk.guard.landlock import landlock_abi

CHILD = r"""
import errno, json, os, sys
from frontdesk.guard.landlock import restrict_writes
ok_dir, no_dir = sys.argv[1], sys.argv[2]
out = {"restricted": restrict_writes([ok_dir])}
def attempt(fn):
    try:
        fn(); return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
out["write_ok"] = attempt(lambda: open(os.path.join(ok_dir, "a"), "w").write("x"))
out["write_no"] = attempt(lambda: open(os.path.join(no_dir, "a"), "w").write("x"))
out["mkdir_no"] = attempt(lambda: os.mkdir(os.path.join(no_dir, "d")))
out["unlink_no"] = attempt(lambda: os.unlink(os.path.join(no_dir, "keep")))
out["read_no"] = attempt(lambda: open(os.path.join(no_dir, "keep")).read())
out["devnull"] = attempt(lambda: open("/dev/null", "w").write("x"))
import subprocess
out["child_shell"] = subprocess.run(["sh", "-c", f"echo x > {no_dir}/b"], capture_output=True).returncode
print(json.dumps(out))
"""


@pytest.mark.skipif(landlock_abi() < 1, reason="kernel without Landlock")
def test_writes_outside_allowed_dirs_fail_with_eacces(tmp_path: Path) -> None:
    ok_dir, no_dir = tmp_path / "ok", tmp_path / "no"
    ok_dir.mkdir()
    no_dir.mkdir()
    (no_dir / "keep").write_text("data")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ok_dir), str(no_dir)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["restricted"] is True
    assert out["write_ok"] == "ok" and out["read_no"] == "ok" and out["devnull"] == "ok"
    assert out["write_no"] == out["mkdir_no"] == out["unlink_no"] == "EACCES"
    assert out["child_shell"] != 0  # inherited by descendants
    assert (no_dir / "keep").read_text() == "data" and not (no_dir / "a").exists()


def test_parent_is_untouched_and_abi_is_an_int() -> None:
    assert isinstance(landlock_abi(), int)
    probe = Path("/tmp") / f"fd-landlock-probe-{id(object())}"
    probe.write_text("x")  # this process was never restricted
    probe.unlink()


def test_unsupported_returns_false_without_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    from frontdesk.guard import landlock

    monkeypatch.setattr(landlock, "landlock_abi", lambda: 0)
    assert landlock.restrict_writes(["/tmp"]) is False
    monkeypatch.setattr(landlock, "_libc", lambda: None)
    assert landlock.restrict_writes(["/tmp"]) is False


def test_describe_names_the_abi_or_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from frontdesk.guard import landlock

    line = landlock.describe(["/work", "/tmp"])
    assert ("ABI" in line and "/work, /tmp" in line) if landlock.landlock_abi() else "not available" in line
    monkeypatch.setattr(landlock, "landlock_abi", lambda: 0)
    assert "without a write sandbox" in landlock.describe(["/work"])
