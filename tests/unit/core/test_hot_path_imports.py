"""The agent's hot paths (CLI, hooks, shims) import no heavy module: each runs as a fresh process per call.

Each path runs for real in a subprocess under `python -X importtime`, which lists every module the process
imported (also when it ends by exec'ing another program), against a real gateway where it talks to one.
Timings are not asserted here (bench/hotpath.py prints them); only what gets imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PY = sys.executable

HEAVY = (
    "anyio",
    "asyncio",
    "click",
    "email",
    "fastapi",
    "h11",
    "http.client",
    "httpx",
    "prometheus_client",
    "pydantic",
    "pydantic_core",
    "rich",
    "sqlite3",
    "starlette",
    "tree_sitter",
    "typer",
    "uvicorn",
    "yaml",
)
"""Modules that cost tens of milliseconds (or start an event loop / a database) and no thin client needs."""

STOP_PAYLOAD = json.dumps({"session_id": "hot-path", "cwd": "/tmp", "hook_event_name": "Stop", "transcript_path": ""})


def imported(
    argv: list[str], env: dict[str, str], stdin: str = ""
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules a fresh process imported while running `argv` (a Python command line)."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "[us]" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, f"no import trace from {argv}: {done.stderr[-500:]}"
    return names, done


def heavy_in(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    return {**env, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1", **extra}


@pytest.mark.parametrize(
    "args",
    [["--version"], ["--help"], ["submit", "--help"], ["run", "--help"], ["status", "--help"], ["wait", "--help"]],
    ids=lambda a: " ".join(a),
)
def test_cli_paths_without_a_gateway_import_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    names, done = imported([PY, "-m", "frontdesk.cli.main", *args], cli_env(tmp_path))
    assert done.returncode == 0, done.stderr[-500:]
    assert "frontdesk.cli.main" in names or "frontdesk.cli" in names
    assert heavy_in(names) == []


def test_a_command_that_finds_no_gateway_imports_nothing_heavy(tmp_path: Path) -> None:
    env = cli_env(tmp_path, FRONTDESK_SOCKET=str(tmp_path / "none.sock"))
    names, done = imported([PY, "-m", "frontdesk.cli.main", "status", "1", "--json"], env)
    assert done.returncode == 69, done.stderr[-500:]  # gateway down: one line, EX_UNAVAILABLE
    assert "frontdesk.client" in names
    assert heavy_in(names) == []


def test_status_report_and_wait_against_a_gateway_import_nothing_heavy(gateway: Any) -> None:
    job = gateway.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
    gateway.client.wait([job], "all", 60)
    env = cli_env(gateway.home)
    for args in (["status", str(job), "--json"], ["report", str(job)], ["wait", str(job), "--json"]):
        names, done = imported([PY, "-m", "frontdesk.cli.main", *args], env)
        assert done.returncode == 0, (args, done.stderr[-500:])
        assert "frontdesk.cli.fast" in names  # answered by the fast path (no frontdesk.client at all)
        assert heavy_in(names) == [], args


def test_the_stop_hook_imports_nothing_heavy(gateway: Any) -> None:
    names, done = imported(
        [PY, "-m", "frontdesk.cli.main", "hook", "stop", "--harness", "claude-code"],
        cli_env(gateway.home),
        STOP_PAYLOAD,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "frontdesk.agents.hooks" in names
    assert heavy_in(names) == []


def test_the_squeue_shims_import_nothing_heavy(gateway: Any, tmp_path: Path) -> None:
    shim_dir = tmp_path / "shims"
    installed = gateway.cli("shim", "install", str(shim_dir))
    assert installed.returncode == 0, installed.stderr
    env = cli_env(gateway.home, PATH=f"{shim_dir}:{os.environ['PATH']}")
    assert (shim_dir / "squeue").read_text().startswith("#!/bin/sh\n")  # the file reader: no Python at all
    for script in (shim_dir / ".full" / "squeue-socket", shim_dir / ".full" / "squeue"):  # socket-only, full
        interpreter = script.read_text().splitlines()[0][2:].split()  # the shim's own #! line
        names, done = imported([*interpreter, str(script), "--me"], env)
        assert "_socket" in names
        assert heavy_in(names) == [], (script, done.stderr[-300:])
    names, done = imported([PY, "-m", "frontdesk.shims.squeue", "--me"], env)
    assert "frontdesk.shims.common" in names
    assert heavy_in(names) == []


NOT_ON_THE_CLI = ("typing", "gettext", "locale")
"""Not heavy, but 1-2 ms each of a CLI start whose goal is 2x `python -c pass` (issue 21): annotations only."""


def test_version_builds_no_parser_and_status_imports_no_typing(gateway: Any) -> None:
    names, done = imported([PY, "-m", "frontdesk.cli.main", "--version"], cli_env(gateway.home))
    assert done.returncode == 0 and done.stdout.startswith("frontdesk ")
    assert {"argparse", "json", "frontdesk.errors", *NOT_ON_THE_CLI} & names == set()
    job = gateway.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
    gateway.client.wait([job], "all", 60)
    for args in (["status", str(job), "--tasks"], ["submit", "--help"], ["run", "--", "true"]):
        names, done = imported([PY, "-m", "frontdesk.cli.main", *args], cli_env(gateway.home))
        assert done.returncode == 0, (args, done.stderr[-500:])
        assert "argparse" in names
        assert set(NOT_ON_THE_CLI) & names == set(), args


def test_the_heavy_list_catches_a_heavy_import(tmp_path: Path) -> None:
    names, _ = imported([PY, "-c", "import sqlite3"], cli_env(tmp_path))
    assert heavy_in(names) == ["sqlite3", "sqlite3.dbapi2"]


NOT_ON_THE_FAST_PATH = ("argparse", "re", "pathlib", "typing", "json", "socket", "frontdesk.client", "frontdesk.errors")
"""What `import re, argparse, json` alone costs is ~1.9x `python -c pass` (issue 21): the loop commands skip it."""


def test_the_commands_agents_loop_on_take_the_fast_path(gateway: Any) -> None:
    job = gateway.client.submit(spec={"command": ["sh", "-c", "echo out; echo err >&2"]}, context={"cwd": "/tmp"})
    gateway.client.wait([job["id"]], "all", 60)
    jid = str(job["id"])
    forms = (
        ["status", jid, "--json"],
        ["status", jid],
        ["report", jid],
        ["report", jid, "--json"],
        ["wait", jid, "--json"],
        ["wait", jid],
        ["logs", jid],
        ["logs", jid, "--stderr", "--json"],
    )
    for args in forms:  # in an agent session too: `report` and `wait` then tell the gateway the report was read
        names, done = imported([PY, "-m", "frontdesk.cli.main", *args], cli_env(gateway.home, FRONTDESK_SESSION="s1"))
        assert done.returncode == 0 and done.stdout, (args, done.stderr[-500:])
        assert "frontdesk.cli.fast" in names, args
        assert set(NOT_ON_THE_FAST_PATH) & names == set(), args


HOOK_RUNS = [
    (["-m", "frontdesk.agents.hooks", "stop", "--harness", "claude-code", "--budget", "880"], STOP_PAYLOAD),
    (["-m", "frontdesk.cli.main", "hook", "stop", "--harness", "claude-code"], STOP_PAYLOAD),
    (["-m", "frontdesk.agents.hooks", "subagent-stop"], STOP_PAYLOAD),
    (["-m", "frontdesk.agents.hooks", "session-end"], STOP_PAYLOAD),
    (["-m", "frontdesk.agents.hooks", "stop", "--harness", "codex"], STOP_PAYLOAD),
    (["-m", "frontdesk.agents.hooks", "notify", "--harness", "codex", '{"thread-id": "hot-path-codex"}'], ""),
]
"""The hooks a harness runs on every turn, as `frontdesk hooks install` writes them (and the console form)."""


@pytest.mark.parametrize(("args", "stdin"), HOOK_RUNS, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_the_hooks_run_on_every_turn_are_thin_clients(gateway: Any, args: list[str], stdin: str) -> None:
    # what the CLI's loop commands skip, a hook skips too (issue 21: a hook is 2x `python -c pass`, not 4x)
    names, done = imported([PY, *args], cli_env(gateway.home), stdin)
    assert done.returncode == 0 and done.stdout == "", (args, done.stderr[-500:])
    assert "frontdesk.thin" in names  # (`-m frontdesk.agents.hooks` runs it as __main__)
    assert set(NOT_ON_THE_FAST_PATH) & names == set(), args
    assert "frontdesk.agents.harnesses" not in names and heavy_in(names) == [], args


def test_a_hook_with_something_to_show_still_shows_it(gateway: Any) -> None:
    # the thin path loads the harness's rendering only then: the report reaches the Stop hook and is acknowledged
    sid = "hot-path-deliver"
    run = gateway.cli("run", "--json", "--", "true", env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"})
    assert run.returncode == 0, run.stderr
    job = int(json.loads(run.stdout)["id"])
    payload = json.dumps({"session_id": sid, "cwd": "/tmp", "hook_event_name": "Stop", "transcript_path": ""})
    env = cli_env(gateway.home)
    names, done = imported([PY, "-m", "frontdesk.agents.hooks", "stop", "--budget", "30"], env, payload)
    assert done.returncode == 0, done.stderr[-500:]
    shown = json.loads(done.stdout)
    assert shown["decision"] == "block" and f"{job}" in shown["reason"], shown
    assert "frontdesk.thin" in names and "frontdesk.client" not in names and "argparse" not in names
    again = subprocess.run(
        [PY, "-m", "frontdesk.agents.hooks", "stop", "--budget", "0"],
        env=env,
        input=payload,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (again.returncode, again.stdout) == (0, ""), again.stderr  # acknowledged: not shown twice


def test_a_hook_the_thin_path_does_not_know_takes_the_full_client(gateway: Any) -> None:
    # a harness a plug-in registers: answered by run_hook through client.Client, as before (its entry points read)
    args = ["stop", "--harness", "some-plugin-harness"]
    names, done = imported([PY, "-m", "frontdesk.agents.hooks", *args], cli_env(gateway.home), STOP_PAYLOAD)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr[-500:]
    assert "frontdesk.client" in names
    # a form only argparse reads (`--harness=X`) is parsed so, then sent the thin way
    args = ["stop", "--harness=claude-code"]
    names, done = imported([PY, "-m", "frontdesk.agents.hooks", *args], cli_env(gateway.home), STOP_PAYLOAD)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr[-500:]
    assert "argparse" in names and "frontdesk.thin" in names and "frontdesk.client" not in names
