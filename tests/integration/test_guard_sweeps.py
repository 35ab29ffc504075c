"""The guard reads a sweep's tasks as they will run: `{name}` filled in, each value of each parameter once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DENIED = 2  # exit status of a refused submission (errors.Denied)


def test_a_sweep_template_that_is_no_shell_until_filled_is_checked_filled(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    res = gw.cli(
        "run", "--json", "--sweep", "lr=1,2", "--", "sh", "-c", "echo loss={lr}; exit $(({lr} - 1))", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    job = json.loads(res.stdout)
    assert job["notices"] == [] and job["warnings"] == []  # the unfilled '$(({lr} - 1))' is no parse error


def test_a_value_that_makes_a_task_dangerous_refuses_the_whole_sweep(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    # Canary: mkfs on a device that does not exist is refused by the same rule and harmless if it ran.
    res = gw.cli(
        "run", "--json", "--sweep", "prog=echo,true,mkfs.ext4", "--", "{prog}", "/dev/fd-does-not-exist", cwd=tmp_path
    )
    assert res.returncode != 0
    assert "disk.wipe" in (res.stdout + res.stderr)
    assert json.loads(gw.cli("jobs", "--json").stdout) == []  # nothing stored


def test_every_value_is_read_in_a_sweep_list(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    spec = {
        "command": ["{prog}", "{dev}"],
        "sweep": [
            {"prog": "echo", "dev": "a"},
            {"prog": "mkfs.ext4", "dev": "a"},
            {"prog": "echo", "dev": "/dev/fd-does-not-exist"},
            {"prog": "mkfs.ext4", "dev": "/dev/fd-does-not-exist"},
        ],
        "resources": {"walltime": "1m", "memory": "64M"},
    }
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(spec))
    res = gw.cli("submit", "--json", str(path), cwd=tmp_path)
    assert res.returncode != 0 and "disk.wipe" in (res.stdout + res.stderr)
    assert json.loads(gw.cli("jobs", "--json").stdout) == []


def test_a_sweep_past_what_the_guard_reads_is_an_ask_not_a_stall(gateway_factory: Any, tmp_path: Path) -> None:
    from frontdesk.guard.plugin import MAX_SWEEP_CHECKS

    gw = gateway_factory()
    spec = {
        "command": ["true", "{seed}"],
        "sweep": {"seed": list(range(MAX_SWEEP_CHECKS + 50))},
        "array": "0",  # one task runs; the guard still reads the sweep's points
        "resources": {"walltime": "1m", "memory": "64M"},
    }
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(spec))
    res = gw.cli("submit", "--json", str(path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    notices = json.loads(res.stdout)["notices"]
    assert [n["rule"] for n in notices] == ["sweep.unchecked"]
    assert f"{MAX_SWEEP_CHECKS} of this sweep's {MAX_SWEEP_CHECKS + 50}" in notices[0]["text"]
