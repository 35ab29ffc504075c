"""The read-ahead walk (on when a filesystem is slow) answers and charges exactly what the serial walk does.

The switch is the walk's own timing of its first reads; here the threshold is set below zero so that every
filesystem counts as slow and the read-ahead path runs on a local tree (the FUSE benchmark,
bench/fs_fuse.py, shows it under real latency). Trees are generated with hypothesis: text and binary files,
symlinks, names that are not UTF-8, directories with more files than the read-ahead window, and globs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debian import need
from frontdesk.storage import ahead
from frontdesk.storage.fs import Fs
from frontdesk.storage.model import Op
from frontdesk.storage.ops import FsRequest, run

NAMES = st.sampled_from(["a", "b.txt", "c d.txt", ".hidden", "x\udcffy.txt", "sub", "z.py", "ä.txt"])
BODIES = st.sampled_from([b"foo\n", b"bar foo\nbaz\n", b"\0foo binary\n", b"", b"nothing here\n"])


@pytest.fixture()
def base() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fs-ahead-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _build(root: Path, dirs: list[tuple[list[str], int, bytes]]) -> None:
    for parts, many, body in dirs:
        d = root.joinpath(*parts)
        if any(p.is_file() for p in [d, *d.parents] if str(p).startswith(str(root))):
            continue
        d.mkdir(parents=True, exist_ok=True)
        for i in range(many):
            name = os.fsencode(d) + b"/f%03d" % i + (b"\xff" if i % 7 == 0 else b"") + b".txt"
            with open(name, "wb") as f:
                f.write(body * (i % 3) + (b"foo %d\n" % i if i % 5 == 0 else b""))
    (root / "link-to-dir").symlink_to(root)
    (root / "link-to-file").symlink_to(root / "none")


def _answer(argv: tuple[str, ...], cwd: Path) -> tuple[object, list[tuple[str, str]], dict[str, int]]:
    argv = tuple(str(cwd / "t") if a == "t" else a for a in argv)  # the worker joins the cwd; run() does not
    res = run(FsRequest(Op.GREP, argv, str(cwd), 100000), Fs())
    return res.to_json()["text"], res.errors, res.stats


DIRS = st.lists(st.tuples(st.lists(NAMES, min_size=1, max_size=2), st.integers(0, 40), BODIES), max_size=6)
ARGVS = [("-n", "foo", "t"), ("-l", "-g", "*.txt", "-g", "!sub", "foo", "t"), ("-c", "-F", "bar foo", "t")]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dirs=DIRS)
def test_read_ahead_answers_and_charges_as_the_serial_walk(
    base: Path, dirs: list[tuple[list[str], int, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    case = Path(tempfile.mkdtemp(dir=base))
    (case / "t").mkdir()
    _build(case / "t", dirs)
    for argv in ARGVS:
        monkeypatch.setattr(ahead, "_SLOW_S", 1.0)
        serial = _answer(argv, case)
        monkeypatch.setattr(ahead, "_SLOW_S", -1.0)
        assert _answer(argv, case) == serial, argv
    if need("rg", "ripgrep"):
        rg = subprocess.run(
            ["rg", "-uu", "-n", "--no-messages", "foo", str(case / "t")], cwd=case, capture_output=True
        ).stdout
        assert sorted(
            str(_answer(("-n", "foo", "t"), case)[0]).encode("utf-8", "surrogateescape").splitlines()
        ) == sorted(rg.splitlines())


def test_an_early_stop_leaves_no_read_in_flight(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page cut by --limit closes the walk: the pool has nothing running on a closed directory."""
    monkeypatch.setattr(ahead, "_SLOW_S", -1.0)
    _build(base / "t", [(["d"], 200, b"foo\n")])
    res = run(FsRequest(Op.GREP, ("-l", "foo", str(base / "t")), str(base), 20), Fs())
    assert len(res.items) == 20 and res.cursor is not None
    assert ahead._pool is not None  # the walk went ahead (after its 16 probe reads)
    assert ahead._pool._work_queue.qsize() == 0


def _run(op: Op, argv: tuple[str, ...], cwd: Path) -> tuple[object, list[tuple[str, str]], dict[str, int]]:
    res = run(FsRequest(op, argv, str(cwd), 100000), Fs())
    return res.to_json()["text"], res.errors, res.stats


def _files(top: Path) -> list[str]:
    out = []
    for d, _dirs, names in os.walk(os.fsencode(top)):  # symlinks to directories not followed
        out += [os.fsdecode(os.path.join(d, n)) for n in names if not os.path.islink(os.path.join(d, n))]
    return sorted(out)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dirs=DIRS, missing=st.booleans())
def test_head_and_wc_read_ahead_answer_and_charge_as_the_serial_reads(
    base: Path, dirs: list[tuple[list[str], int, bytes]], missing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named files (more than the probe, so the pool reads ahead), a missing one among them, a directory."""
    case = Path(tempfile.mkdtemp(dir=base))
    t = case / "t"
    t.mkdir()
    _build(t, dirs)
    files = _files(t)
    if missing or not files:
        files.insert(len(files) // 2, str(t / "missing"))
    questions = [
        (Op.WC, ("-l", *files)),
        (Op.HEAD, ("-n", "2", *files)),
        (Op.WC, ("-g", "*.txt", "-g", "!sub", str(t))),
        (Op.HEAD, ("-n", "1", str(t), *files[:3])),
    ]
    for op, argv in questions:
        monkeypatch.setattr(ahead, "_SLOW_S", 1.0)
        serial = _run(op, argv, case)
        monkeypatch.setattr(ahead, "_SLOW_S", -1.0)
        assert _run(op, argv, case) == serial, (op, argv[:3])
    real = subprocess.run(["wc", "-l", *files], capture_output=True, env={"LC_ALL": "C"}).stdout
    mine = str(_run(Op.WC, ("-l", *files), case)[0]).encode("utf-8", "surrogateescape")
    assert [ln.split() for ln in mine.splitlines()] == [ln.split() for ln in real.splitlines()]


META_QUESTIONS = [
    (Op.FIND, ("t",)),
    (Op.FIND, ("t", "-name", "*.txt", "-type", "f")),
    (Op.FIND, ("t", "-maxdepth", "2", "-type", "d")),
    (Op.DU, ("-a", "-b", "t")),
    (Op.DU, ("t",)),
    (Op.TREE, ("-L", "2", "t")),
]


def _wide(root: Path, dirs: int) -> None:
    """More directories than the probe and the pending bound, nested two deep, so listings go ahead too."""
    for i in range(dirs):
        d = root / f"d{i:02}" / f"e{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "f.txt").write_bytes(b"x" * i)
        (d.parent / "g.txt").write_bytes(b"y")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dirs=DIRS, wide=st.integers(0, 40), watch=st.booleans())
def test_listings_and_stats_read_ahead_answer_and_charge_as_the_serial_walk(
    base: Path, dirs: list[tuple[list[str], int, bytes]], wide: int, watch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """find, du and tree with listings and lstats read ahead (forced) against the serial walk, with and
    without inotify (two questions each: the second served from the trusted cache), and against find/du."""
    from frontdesk.storage import ahead_meta
    from frontdesk.storage.watch import Watcher

    case = Path(tempfile.mkdtemp(dir=base))
    t = case / "t"
    t.mkdir()
    _build(t, dirs)
    _wide(t, wide)
    answers = []
    for slow in (1.0, -1.0):
        monkeypatch.setattr(ahead_meta, "_SLOW_S", slow)
        monkeypatch.setattr(ahead_meta, "_LIST_SLOW_S", slow)
        watcher = Watcher() if watch else None
        fs = Fs(watcher=watcher)
        try:
            got = []
            for op, argv in META_QUESTIONS * 2:
                res = run(FsRequest(op, tuple(str(t) if a == "t" else a for a in argv), str(case), 100000), fs)
                got.append((res.to_json()["text"], res.errors, res.stats))
            answers.append(got)
        finally:
            if watcher is not None:
                watcher.close()
    assert answers[0] == answers[1]
    for (op, argv), (text, _, _) in zip(META_QUESTIONS, answers[1], strict=False):
        if op is Op.TREE:
            continue  # no tool prints the same summary (golden file and test_ops)
        real = subprocess.run([op.value, *argv], cwd=case, capture_output=True, env={"LC_ALL": "C"}).stdout
        mine = str(text).encode("utf-8", "surrogateescape").replace(os.fsencode(t), b"t")
        assert sorted(mine.splitlines()) == sorted(real.splitlines()), (op, argv)
