"""`frontdesk service install|uninstall --user|--system`: golden units, the real CLI, systemd's own check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frontdesk.cli.service import MARKER, render_unit

GOLDEN = Path(__file__).parents[1] / "golden" / "service"
PROGRAM = ["/opt/frontdesk/bin/frontdesk"]


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; regenerate on purpose (FRONTDESK_REGEN_GOLDEN=1) and review"


def test_units_match_their_golden_files() -> None:
    _golden("frontdesk-user.service", render_unit("user", PROGRAM))
    _golden("frontdesk-system.service", render_unit("system", PROGRAM))
    odd = render_unit(
        "user", ["/opt/my frontdesk/bin/python", "-m", "frontdesk.cli.main"], "/run/user/1000/fd 100%.sock"
    )
    _golden("frontdesk-user-quoted.service", odd)
    _golden("frontdesk-user-home.service", render_unit("user", PROGRAM, home="/data/ana/frontdesk state"))


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FRONTDESK_HOME"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "service", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_install_and_uninstall_a_user_unit(tmp_path: Path) -> None:
    res = _cli("install", "--user", "--json", home=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    path = tmp_path / ".config" / "systemd" / "user" / "frontdesk.service"
    assert out == {
        "action": "install",
        "scope": "user",
        "path": str(path),
        "replaced": False,
        "next": [
            "systemctl --user daemon-reload",
            "systemctl --user enable --now frontdesk.service",
            "loginctl enable-linger $USER   # optional: keep it running without a login session",
        ],
    }
    text = path.read_text()
    assert text.startswith(MARKER) and f"ExecStart={Path(sys.executable).parent / 'frontdesk'} serve\n" in text
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    again = _cli("install", "--user", "--json", home=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["replaced"] is True
    gone = _cli("uninstall", "--user", "--json", home=tmp_path)
    assert gone.returncode == 0 and json.loads(gone.stdout)["removed"] is True
    assert not path.exists()
    none = _cli("uninstall", "--user", home=tmp_path)
    assert none.returncode == 0 and "no unit at" in none.stdout


def test_a_unit_someone_else_wrote_is_left_alone(tmp_path: Path) -> None:
    unit = tmp_path / "frontdesk.service"
    unit.write_text("[Service]\nExecStart=/usr/bin/their-own\n")
    for verb in ("install", "uninstall"):
        res = _cli(verb, "--system", "--dir", str(tmp_path), home=tmp_path)
        assert res.returncode == 4, res.stderr  # Conflict
        assert res.stderr.count("\n") == 1 and "not written by frontdesk" in res.stderr
    assert unit.read_text() == "[Service]\nExecStart=/usr/bin/their-own\n"
    assert _cli("install", "--system", "--dir", str(tmp_path), "--force", home=tmp_path).returncode == 0
    assert MARKER in unit.read_text()


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    res = _cli("install", "--user", "--socket", "relative.sock", home=tmp_path)
    assert (
        res.returncode == 2
        and res.stderr.strip() == "frontdesk: --socket must be an absolute path, got 'relative.sock'"
    )
    res = _cli("install", home=tmp_path)
    assert res.returncode == 2 and "--user" in res.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_both_units(tmp_path: Path) -> None:
    for scope in ("user", "system"):
        d = tmp_path / scope
        assert _cli("install", f"--{scope}", "--dir", str(d), home=tmp_path).returncode == 0
        check = subprocess.run(
            ["systemd-analyze", "verify", str(d / "frontdesk.service")], capture_output=True, text=True, timeout=60
        )
        assert check.returncode == 0, check.stderr
        assert "frontdesk.service" not in check.stderr, check.stderr  # no warning about our unit


@pytest.mark.skipif(os.geteuid() != 0, reason="creates a Unix user")
def test_system_unit_needs_root(tmp_path: Path) -> None:
    from unix_users import ensure_user, reachable

    ensure_user("fdu1")
    src = str(reachable(Path(__file__).resolve().parents[2] / "src"))
    res = subprocess.run(
        ["runuser", "-u", "fdu1", "--", "env", "-i", f"PYTHONPATH={src}", "HOME=/home/fdu1"]
        + ["/usr/bin/python3", "-m", "frontdesk.cli.main", "service", "install", "--system"],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr == "frontdesk: --system writes /etc/systemd/system: run it as root (or give --dir)\n"
