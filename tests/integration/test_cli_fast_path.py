"""The CLI's fast path (frontdesk.cli.fast) prints what the full argparse CLI prints, byte for byte, with its exit code.

Each command form runs twice as a real process against a real gateway: once as a process's own command line
(`main()`, which tries the fast path) and once with argv passed in (`main(argv)`, always the full path); stdout,
stderr and the exit code must be equal. The forms the fast path is meant to answer must have been answered
without argparse (so the comparison is not the full path against itself); the rest must fall back.
That `report` and `wait` in an agent session mark the report read is tested through the fast path by
tests/integration/test_hooks_read_once.py (its `gw.cli` is a process's own command line).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stub_gateway import one_answer

PY = sys.executable
RUN = (
    "import os, sys\n"
    "from frontdesk.cli.main import main\n"
    "try:\n"
    "    rc = main({argv})\n"
    "finally:\n"
    "    open(os.environ['FD_T21_MARK'], 'w').write('full' if 'argparse' in sys.modules else 'fast')\n"
    "sys.exit(rc)\n"
)
FAST, FULL = RUN.format(argv=""), RUN.format(argv="sys.argv[1:]")


def both(gw: Any, args: list[str], tmp: Path, **env: str) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """Run `args` both ways; assert equal output; which way the fast process went, and its result."""
    mark = tmp / "mark"
    runs = []
    for script in (FAST, FULL):
        runs.append(
            subprocess.run(
                [PY, "-c", script, *args],
                env={**gw.env, "FD_T21_MARK": str(mark), **env},
                capture_output=True,
                timeout=120,
            )
        )
        if script is FAST:
            went = mark.read_text()
    fast, full = runs
    assert (fast.returncode, fast.stdout, fast.stderr) == (full.returncode, full.stdout, full.stderr), args
    assert b"Traceback" not in fast.stderr
    return went, fast


@pytest.fixture
def jobs(gateway: Any) -> dict[str, str]:
    ok = gateway.client.submit(spec={"command": ["sh", "-c", "echo hello; echo 'é ünïcode'"]}, context={"cwd": "/tmp"})
    bad = gateway.client.submit(spec={"command": ["sh", "-c", "echo oops >&2; exit 3"]}, context={"cwd": "/tmp"})
    gateway.client.wait([ok["id"], bad["id"]], "all", 60)
    long = gateway.client.submit(spec={"command": ["sleep", "600"]}, context={"cwd": "/tmp"})
    gateway.wait_state(long["id"], {"RUNNING"})
    return {"ok": str(ok["id"]), "bad": str(bad["id"]), "running": str(long["id"])}


FAST_FORMS = [
    ["status", "{ok}", "--json"],
    ["status", "{ok}"],
    ["status", "--json", "{bad}"],
    ["status", "{running}"],
    ["report", "{ok}"],
    ["report", "{bad}", "--json"],
    ["logs", "{ok}"],
    ["logs", "{ok}", "--json"],
    ["logs", "{bad}", "--stderr"],
    ["logs", "{bad}", "--stderr", "--json"],
    ["wait", "{ok}", "--json"],
    ["wait", "{ok}"],
    ["wait", "{bad}"],
    ["wait", "{ok}", "{bad}", "--json"],
    ["wait", "{bad}", "{ok}"],
]
FALLBACK_FORMS = [
    ["status", "999999", "--json"],  # a missing job: the gateway's 404, printed by the full path
    ["status", "999999"],
    ["report", "999999"],
    ["logs", "999999", "--json"],
    ["report", "{running}"],  # no report yet
    ["status", "abc"],  # a bad id
    ["status", "12_x", "--json"],
    ["report", "-1"],
    ["status", "{ok}", "--js"],  # argparse's abbreviation
    ["status", "{ok}", "--tasks"],
    ["logs", "{ok}", "--tail", "1"],
    ["wait", "{ok}", "--any"],
    ["report"],
    ["status", "{ok}", "--help"],
]


def _fill(form: list[str], ids: dict[str, str]) -> list[str]:
    return [a.format(**ids) for a in form]


def test_hot_forms_are_answered_fast_and_identically(gateway: Any, jobs: dict[str, str], tmp_path: Path) -> None:
    for form in FAST_FORMS:
        args = _fill(form, jobs)
        went, done = both(gateway, args, tmp_path)
        assert went == "fast", args
        assert done.stdout, args
    went, done = both(gateway, ["wait", jobs["bad"]], tmp_path)
    assert done.returncode == 1
    went, done = both(gateway, ["status", jobs["ok"], "--json"], tmp_path, FRONTDESK_SESSION="t21-session")
    assert went == "fast"


def test_a_wait_the_gateway_refuses_is_told_fast_and_alike(gateway: Any, jobs: dict[str, str], tmp_path: Path) -> None:
    """A wait is never asked twice: the gateway's error answer (here a 404) is printed by the fast path itself,
    byte for byte as the full CLI prints it (and the 503 of a stopping gateway: test_core_restart)."""
    for form in (["wait", "999999", "--json"], ["wait", "999999"], ["wait", jobs["ok"], "999999"]):
        went, done = both(gateway, form, tmp_path)
        assert went == "fast", form
        assert done.returncode != 0, form


def test_cancel_is_answered_fast_and_an_ended_job_falls_back(
    gateway: Any, jobs: dict[str, str], tmp_path: Path
) -> None:
    mark = tmp_path / "mark"
    runs = []
    for script in (FAST, FULL):  # cancel changes state: one fresh running job for each way
        job = gateway.client.submit(spec={"command": ["sleep", "600"]}, context={"cwd": "/tmp"})["id"]
        gateway.wait_state(job, {"RUNNING"})
        for args in (["cancel", str(job)], ["cancel", str(job), "--json"]):  # the second once it has ended
            env = {**gateway.env, "FD_T21_MARK": str(mark)}
            done = subprocess.run([PY, "-c", script, *args], env=env, capture_output=True, timeout=120)
            out, err = (b.replace(str(job).encode(), b"ID") for b in (done.stdout, done.stderr))
            runs.append((mark.read_text(), done.returncode, out, err))
            gateway.wait_state(job, {"CANCELLED"})
    fast, full = runs[:2], runs[2:]
    assert fast[0][0] == "fast" and fast[0][1:] == full[0][1:] == (0, b"cancelling ID\n", b"")
    assert fast[1][0] == "full" and fast[1][1:] == full[1][1:]  # the second cancel: an ended job, the full path
    assert fast[1][1] != 0 and fast[1][3].startswith(b"frontdesk: ")
    went, done = both(gateway, ["cancel", jobs["ok"], "--json"], tmp_path)
    assert went == "full" and done.returncode != 0
    went, done = both(gateway, ["cancel", "999999"], tmp_path)
    assert went == "full" and done.returncode == 3


def test_other_forms_fall_back_with_the_same_error(gateway: Any, jobs: dict[str, str], tmp_path: Path) -> None:
    for form in FALLBACK_FORMS:
        args = _fill(form, jobs)
        went, done = both(gateway, args, tmp_path)
        assert went == "full", args
        if not set(args) & {"--js", "--tasks", "--tail", "--any", "--help"}:  # the rest are errors
            assert done.returncode != 0 and done.stderr.startswith(b"frontdesk: "), args


def test_no_gateway_falls_back_with_the_same_error(gateway: Any, jobs: dict[str, str], tmp_path: Path) -> None:
    gateway.stop()
    for args in (["status", jobs["ok"], "--json"], ["report", jobs["ok"]], ["wait", jobs["ok"], "--json"]):
        went, done = both(gateway, args, tmp_path)
        assert went == "full" and done.returncode == 69, (args, done.stderr)
    os.makedirs(tmp_path / "elsewhere", exist_ok=True)
    went, done = both(gateway, ["status", "1"], tmp_path, FRONTDESK_SOCKET=str(tmp_path / "elsewhere" / "gw.sock"))
    assert went == "full" and done.returncode == 69


def test_an_array_is_fast_in_json_and_its_status_line_goes_the_full_way(gateway: Any, tmp_path: Path) -> None:
    array = gateway.client.submit(spec={"command": ["true"], "array": "0-1"}, context={"cwd": "/tmp"})["id"]
    gateway.client.wait([array], "all", 60)
    for args, way in (
        (["status", str(array), "--json"], "fast"),
        (["status", str(array)], "full"),  # the array's one line (its task counts) is cli/jobs.py's alone
        (["status", f"{array}_1", "--json"], "full"),
        (["wait", str(array), "--json"], "fast"),
    ):
        went, done = both(gateway, args, tmp_path)
        assert (went, done.returncode) == (way, 0), (args, done.stderr)


ANSWERS = [
    b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"id": 1',  # cut off
    b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n{"id": 1',  # cut off, chunked
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # a bad chunk size
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{oops",  # not JSON
    # whole, chunked (answered by the fast path: asking again would find nobody)
    b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f\r\n{"id": 1, "state": "COMPLETED"}\r\n0\r\n\r\n',
]


@pytest.mark.parametrize("answer", ANSWERS, ids=range(len(ANSWERS)))
def test_a_broken_200_is_told_alike_without_asking_again(answer: bytes, tmp_path: Path) -> None:
    d = Path(__import__("tempfile").mkdtemp(prefix="fdt21-", dir="/tmp"))  # short: a socket path's limit
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(FRONTDESK_SOCKET=str(d / "gw.sock"), FRONTDESK_NO_AUTOSTART="1", FD_T21_MARK=str(tmp_path / "m"))
    try:
        for args in (["status", "1"], ["status", "1", "--json"], ["cancel", "1"], ["cancel", "1", "--json"]):
            got = []
            for script in (FAST, FULL):
                t = one_answer(d / "gw.sock", answer)
                done = subprocess.run([PY, "-c", script, *args], env=env, capture_output=True, timeout=60)
                t.join(5)
                got.append((done.returncode, done.stdout, done.stderr))
            assert got[0] == got[1], args
            assert b"Traceback" not in got[0][2]
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)
