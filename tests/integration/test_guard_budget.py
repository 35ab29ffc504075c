"""What the guard reads of one submission on the gateway's loop is bounded (`MAX_GUARD_LINES`/`MAX_GUARD_CHARS`):
a script past it is read up to the budget (a deny there stands) and is at least the ask `guard.unchecked`, never a
stall of the gateway (a 1 MiB script of short lines took the loop for about a minute before).

Canaries: every script starts with `exit 0` and the refused line is mkfs on a device that does not exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frontdesk.guard.plugin import MAX_GUARD_LINES

CANARY = "mkfs.ext4 /dev/fd-does-not-exist\n"
FILLER = ": step\n" * (60 * MAX_GUARD_LINES)  # ~420 KB, under the 1 MiB body cap


def _submit(gw: Any, tmp_path: Path, script: str) -> Any:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"script": script, "resources": {"walltime": "1m", "memory": "64M"}}))
    return gw.cli("submit", "--json", str(path), cwd=tmp_path)


def test_a_long_script_is_read_up_to_the_budget_and_asks(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    res = _submit(gw, tmp_path, "#!/bin/sh\nexit 0\n" + FILLER + CANARY)
    assert res.returncode == 0, res.stderr
    notices = json.loads(res.stdout)["notices"]
    assert [n["rule"] for n in notices] == ["guard.unchecked"]
    assert f"{MAX_GUARD_LINES:,} lines" in notices[0]["text"]
    health = gw.cli("status", "--json", cwd=tmp_path)  # the gateway still answers
    assert health.returncode == 0, health.stderr


def test_a_refused_line_within_the_budget_still_refuses_a_long_script(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    res = _submit(gw, tmp_path, "#!/bin/sh\nexit 0\n" + CANARY + FILLER)
    assert res.returncode != 0 and "disk.wipe" in (res.stdout + res.stderr)
    assert json.loads(gw.cli("jobs", "--json").stdout) == []  # nothing stored


def test_a_site_that_blocks_asks_refuses_what_the_guard_did_not_read(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(config="[guard]\nask_blocks_jobs = true\n")
    res = _submit(gw, tmp_path, "#!/bin/sh\nexit 0\n" + FILLER + CANARY)
    assert res.returncode != 0 and "guard.unchecked" in (res.stdout + res.stderr)
    assert json.loads(gw.cli("jobs", "--json").stdout) == []
    short = _submit(gw, tmp_path, "#!/bin/sh\necho fine\n")  # a script within the budget is read and runs
    assert short.returncode == 0 and json.loads(short.stdout)["notices"] == [], short.stdout + short.stderr
