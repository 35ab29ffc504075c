"""Hostile SWF traces and flags to the real `frontdesk simulate`: each is exit 2 with one line on stderr (one
JSON error object with --json), never a traceback, a hang or a machine's worth of memory. Before: a header
`MaxNodes: 10^12` (or --nodes 10^9, --agent-nodes 10^9) built a node object per node until memory ran out; a NaN
runtime or submit time never finished; `inf` in a field and --hours inf were tracebacks; a gzip bomb was inflated
whole; a file of comments only replayed nothing with exit 0; --policy /dev/zero was a MemoryError and a FIFO
blocked forever; `４` (a full-width digit) and `1_000` were read as numbers; --procs 0 was silently --nodes."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

GOOD_ROW = "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 -1 -1 -1 -1"
HEADER = "; MaxProcs: 64\n"


def _row(**fields: str) -> str:
    cols = GOOD_ROW.split()
    for index, value in fields.items():
        cols[int(index.removeprefix("f"))] = value
    return " ".join(cols) + "\n"


TRACES = {
    "huge-machine": "; MaxProcs: 1000000000000\n; MaxNodes: 1000000000000\n" + GOOD_ROW + "\n",
    "runtime-inf": HEADER + _row(f3="inf"),
    "procs-inf": HEADER + _row(f7="inf"),
    "runtime-nan": HEADER + _row(f3="nan"),
    "submit-nan": HEADER + _row(f1="NaN"),
    "submit-1e400": HEADER + _row(f1="1e400"),
    "long-digits": HEADER + _row(f3="9" * 400_000),
    "fullwidth-digit": HEADER + _row(f7="\uff14"),
    "underscore": HEADER + _row(f3="1_000"),
    "comments-only": HEADER + "; nothing else\n",
    "empty": "",
    "too-many-lines": HEADER + "\n" * 2_000_001,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile swf")
    for name, text in TRACES.items():
        (d / f"{name}.swf").write_text(text)
    (d / "ok.swf").write_text(HEADER + GOOD_ROW + "\n")
    with gzip.open(d / "bomb.swf.gz", "wb", compresslevel=1) as fh:
        chunk = b";" + b" " * (1 << 20) + b"\n"
        for _ in range(300):  # 300 MiB inflated, about 300 KiB on disk
            fh.write(chunk)
    os.mkfifo(d / "fifo.toml")
    return d


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _simulate(*argv: str, json_out: bool = False) -> subprocess.CompletedProcess[str]:
    policy = [] if "--agent-nodes" in argv else ["--policy", "fifo"]  # agent nodes are frontdesk's alone
    return subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "simulate", *argv, *policy] + (["--json"] if json_out else []),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_memory,
        check=False,
    )


def _assert_refused(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("frontdesk: "), r.stderr[-2000:]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("name", sorted(TRACES) + ["bomb.swf.gz"])
def test_a_hostile_trace_is_refused_in_one_line(files: Path, name: str) -> None:
    path = files / (name if name.endswith(".gz") else f"{name}.swf")
    _assert_refused(_simulate(str(path)))


FLAGS = [
    ["--procs", "1000000000", "--nodes", "1000000000"],
    ["--procs", "0", "--nodes", "4"],
    ["--agent-nodes", "1000000000"],
    ["--hours", "inf"],
    ["--hours", "nan"],
    ["--hours", "1e308"],
    ["--hours", "0"],
    ["--hours", "-5"],
    ["--policy", "/dev/zero"],
    ["--policy", "{dir}/fifo.toml"],
]


@pytest.mark.parametrize("flags", FLAGS, ids=[" ".join(f) for f in FLAGS])
def test_a_hostile_flag_is_refused_in_one_line(files: Path, flags: list[str]) -> None:
    workload = "agent-day" if flags[0] == "--hours" else str(files / "ok.swf")
    argv = [workload, *(f.replace("{dir}", str(files)) for f in flags)]
    _assert_refused(_simulate(*argv))
    r = _simulate(*argv, json_out=True)
    assert r.returncode == 2
    error = json.loads(r.stdout)
    assert error["error"] and "\n" not in error["message"]


def test_the_good_trace_still_replays(files: Path) -> None:
    r = _simulate(str(files / "ok.swf"), json_out=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["jobs"] == 1
