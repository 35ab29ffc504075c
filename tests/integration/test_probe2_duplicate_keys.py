"""A job spec with a key written twice is refused in one line (exit 2 from the CLI, 422 from the gateway), YAML
and JSON alike, and nothing is stored. Before: the last one silently won, so a reader of the file saw the first
`command:` (a harmless canary here) while the gateway queued the second; nested mappings (resources) too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SPECS = {
    "dup.yaml": "command: [echo, shown]\nname: a\ncommand: [echo, hidden]\n",
    "nested.yaml": "command: [echo]\nresources:\n  cpus: 1\n  cpus: 2\n",
    "dup.json": '{"command": ["echo", "shown"], "command": ["echo", "hidden"]}',
    "nested.json": '{"command": ["echo"], "resources": {"cpus": 1, "cpus": 2}}',
}


def _cli(gw: Any, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "frontdesk.cli.main", *args]
    return subprocess.run(argv, env=gw.env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_spec_with_a_key_twice_is_refused_and_nothing_stored(gateway: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(SPECS[name])
    r = _cli(gateway, "submit", str(path))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "duplicate key" in r.stderr and "Traceback" not in r.stderr, r.stderr
    js = _cli(gateway, "submit", "--json", str(path))
    assert js.returncode == 2 and "duplicate key" in json.loads(js.stdout)["message"], js.stdout
    assert gateway.client.request("GET", "/v1/jobs") == []


def test_the_same_spec_once_each_is_accepted(gateway: Any, tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    path.write_text("command: [echo, once]\nresources:\n  cpus: 1\n")
    r = _cli(gateway, "submit", "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert [j["id"] for j in gateway.client.request("GET", "/v1/jobs")] == [json.loads(r.stdout)["id"]]
