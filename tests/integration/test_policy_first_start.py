"""A `[policy]` the gateway refuses (a misspelt key, `enabled = "yes"`) stops its first start in one line, exit 2:
it ran the defaults with only a log line, so a site switching suspension on with a typo ran without it unnoticed.
Once a version is in force, a bad edit is refused at restart and the version in force stays (the gateway runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    env.pop("FRONTDESK_SOCKET", None)
    return env


def _config(home: Path, text: str) -> None:
    (home / "frontdesk.toml").write_text(text)
    (home / "frontdesk.toml").chmod(0o600)


def _serve(home: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "frontdesk.cli.main", "serve"]
    return subprocess.Popen(cmd, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _answers(home: Path, gw: subprocess.Popen[str]) -> bool:
    """Whether the gateway came up (its status answers) before it exited."""
    for _ in range(400):
        if gw.poll() is not None:
            return False
        cmd = [sys.executable, "-m", "frontdesk.cli.main", "status", "--json"]
        if subprocess.run(cmd, env=_env(home), capture_output=True, timeout=30).returncode == 0:
            return True
        subprocess.run(["sleep", "0.05"], check=True)
    return False


@pytest.mark.parametrize(
    ("policy", "named"),
    [("[policy.suspend]\nenabeld = true\n", "suspend.enabeld"), ('[policy.suspend]\nenabled = "yes"\n', "enabled")],
)
def test_a_refused_policy_stops_the_first_start(tmp_path: Path, policy: str, named: str) -> None:
    _config(tmp_path, policy)
    gw = _serve(tmp_path)
    try:
        _, err = gw.communicate(timeout=60)
    finally:
        gw.kill()
    assert gw.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("frontdesk: [policy]") and named in lines[0], err
    assert not list(tmp_path.rglob("*.sock")), "the socket is left behind"


def test_a_bad_edit_after_a_version_is_in_force_keeps_it(tmp_path: Path) -> None:
    _config(tmp_path, "[policy.suspend]\nenabled = false\n")
    gw = _serve(tmp_path)
    try:
        assert _answers(tmp_path, gw), gw.stderr.read() if gw.stderr else ""
    finally:
        gw.terminate()
        gw.communicate(timeout=60)
    _config(tmp_path, "[policy.suspend]\nenabeld = true\n")
    gw = _serve(tmp_path)
    try:
        assert _answers(tmp_path, gw), "a refused edit stopped a gateway that had a version in force"
    finally:
        gw.terminate()
        _, err = gw.communicate(timeout=60)
    assert "policy refused, version 1 stays in force" in err, err[-2000:]
