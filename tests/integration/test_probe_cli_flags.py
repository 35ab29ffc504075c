"""Hostile flags and files to the real CLI against a real gateway: each is a non-zero exit and one line on
stderr (one JSON error object on stdout with --json), never a traceback or a silent success; `frontdesk fs`
exits as the tool it stands in for when a path fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CASES = [
    ["run", "--cpus", "-1", "--", "true"],
    ["run", "--cpus", "99999999999999999999999", "--", "true"],
    ["run", "--mem", "-5G", "--", "true"],
    ["run", "--walltime", "-1", "--", "true"],
    ["run", "--gpus", "nan", "--", "true"],
    ["run", "--name", "a\x01b", "--", "true"],
    ["run", "--after", "99999999999999999999999", "--", "true"],
    ["run", "--array", "5-1", "--", "true"],
    ["status", "99999999999999999999999"],
    ["status", "-1"],
    ["logs", "1", "--tail", "-1"],
    ["wait", "1", "--timeout", "nan"],
    ["events", "--since", "-5"],
    ["events", "--limit", "0"],
    ["events", "--limit", "-1"],
    ["jobs", "--state", "BOGUS"],
    ["submit", "{dir}/nul.yaml"],
    ["submit", "{dir}/latin1.yaml"],
    ["submit", "{dir}/deep.json"],
    ["submit", "/dev/zero"],
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    (d / "nul.yaml").write_bytes(b'command: ["a\x00b"]\n')
    (d / "latin1.yaml").write_bytes(b'command: ["\xff\xfe"]\n')
    (d / "deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    return d


def _cli(gw: Any, args: list[str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "frontdesk.cli.main", *args]
    return subprocess.run(argv, env=gw.env, capture_output=True, text=True, errors="replace", timeout=60)


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a)[:40])
def test_hostile_flags_are_one_line_and_non_zero(gateway: Any, files: Path, args: list[str]) -> None:
    args = [a.replace("{dir}", str(files)) for a in args]
    plain = _cli(gateway, args)
    assert plain.returncode != 0, plain
    assert plain.stderr.count("\n") == 1 and "Traceback" not in plain.stderr, plain.stderr
    js = _cli(gateway, [args[0], "--json", *args[1:]])
    assert js.returncode == plain.returncode, (js, plain)
    assert isinstance(json.loads(js.stdout)["message"], str), js.stdout


def test_fs_exits_as_the_tool_when_a_path_fails(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hay\n")
    env_args = ["--local"]
    for op, args, code in [
        ("head", ["missing"], 1),
        ("wc", ["a.txt", "missing"], 1),
        ("head", ["/dev/zero"], 1),
        ("find", ["missing"], 1),
        ("grep", ["-r", "hay", "missing"], 2),
        ("grep", ["-r", "needle", "."], 1),
        ("head", ["a.txt"], 0),
        ("grep", ["-r", "hay", "."], 0),
    ]:
        res = subprocess.run(
            [sys.executable, "-m", "frontdesk.cli.main", "fs", op, *env_args, *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == code, (op, args, res)
