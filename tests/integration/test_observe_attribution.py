"""`frontdesk observe` on real process trees: harness-named parents, agent environment markers, a person's
interactive shell in a real pty (with an agent started from it), and detached daemons that must be excluded.

Every tree is detached from pytest (double fork, clean environment), so the runner's own ancestry (maybe an
agent's shell) does not decide the outcome. Ground truth is what each shell itself wrote (`echo $!`).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CLEAN_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
HARNESS_EXES = {
    "claude": "claude-code",
    "codex": "codex",
    "cursor-agent": "cursor",
    "copilot": "copilot",
    "gemini": "gemini-cli",
    "opencode": "opencode",
}
CHILDREN = 6
FAKE_KEY = "sk-ant-api03-" + "Q7" * 20  # shaped like a key, never a real one


@dataclass
class Trees:
    """Expected attribution per pid: (actor, harness or None); excluded pids map to ("excluded", None)."""

    expected: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    started: list[int] = field(default_factory=list)
    masters: list[int] = field(default_factory=list)


def _detached(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Start argv reparented away from pytest (the intermediate shell exits); its pid."""
    out = subprocess.run(
        ["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv],
        env=env or CLEAN_ENV,
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,
        timeout=10,
    )
    return int(out.stdout.strip())


def _pids(path: Path, n: int) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) >= n:
            return [int(x) for x in lines[:n]]
        time.sleep(0.05)
    raise AssertionError(f"{path} never listed {n} pids")


def _tree_script(pidfile: Path, tag: int) -> str:
    kids = "; ".join(f"sleep {300 + tag} & echo $! >> {pidfile}" for _ in range(CHILDREN))
    return f"{kids}; wait"


def _spawn_pty_shell(tmp: Path, trees: Trees, exe_dir: Path) -> None:
    master, slave = os.openpty()
    name = os.ttyname(slave)
    helper = (
        "import os,sys; os.setsid(); fd=os.open(sys.argv[1], os.O_RDWR); [os.dup2(fd, i) for i in range(3)]; "
        "os.execvp('bash', ['bash', '--norc', '--noprofile', '-i'])"
    )
    env = {**CLEAN_ENV, "HOME": str(tmp), "PS1": "$ "}
    shell = _detached([sys.executable, "-c", helper, name], env=env)
    os.close(slave)
    trees.masters.append(master)
    trees.started.append(shell)
    person, agent = tmp / "person.pids", tmp / "pty-agent.pids"
    lines = [f"echo $$ >> {person}"] + [f"sleep {400 + i} & echo $! >> {person}" for i in range(CHILDREN)]
    lines.append(f"{exe_dir / 'claude'} -c 'echo $$ >> {agent}; {_tree_script(agent, 90)}' &")
    os.write(master, ("\n".join(lines) + "\n").encode())
    for pid in _pids(person, CHILDREN + 1):
        trees.expected[pid] = ("person", None)
    for pid in _pids(agent, CHILDREN + 1):
        trees.expected[pid] = ("agent", "claude-code")


@pytest.fixture
def trees(tmp_path: Path) -> Iterator[Trees]:
    with spawn_trees(tmp_path) as t:
        yield t


@contextmanager
def spawn_trees(tmp_path: Path) -> Iterator[Trees]:
    """Every kind of tree; all of it killed (by pid) afterwards."""
    t = Trees()
    exe_dir = tmp_path / "bin"
    exe_dir.mkdir()
    for name in HARNESS_EXES:
        (exe_dir / name).symlink_to("/bin/sh")
    try:
        for i, (name, harness) in enumerate(HARNESS_EXES.items()):
            pidfile = tmp_path / f"{name}.pids"
            script = _tree_script(pidfile, i) + f"; sleep 0 # token {FAKE_KEY}"
            root = _detached([str(exe_dir / name), "-c", script])
            t.started.append(root)
            t.expected[root] = ("agent", harness)
            for pid in _pids(pidfile, CHILDREN):
                t.expected[pid] = ("agent", harness)
        markers = {"CLAUDECODE": "1", "CODEX_THREAD_ID": "t-1", "AI_AGENT": "opencode_1.0_agent"}
        for i, (key, value) in enumerate(markers.items()):
            pidfile = tmp_path / f"marker{i}.pids"
            root = _detached(["sh", "-c", _tree_script(pidfile, 20 + i)], env={**CLEAN_ENV, key: value})
            t.started.append(root)
            harness = {"CLAUDECODE": "claude-code", "CODEX_THREAD_ID": "codex", "AI_AGENT": "opencode"}[key]
            for pid in [root, *_pids(pidfile, CHILDREN)]:
                t.expected[pid] = ("agent", harness)
        pidfile = tmp_path / "daemon.pids"
        root = _detached(["sh", "-c", _tree_script(pidfile, 50)])
        t.started.append(root)
        for pid in [root, *_pids(pidfile, CHILDREN)]:
            t.expected[pid] = ("excluded", None)
        _spawn_pty_shell(tmp_path, t, exe_dir)
        yield t
    finally:
        for pid in {*t.expected, *t.started}:  # only what this test started
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for fd in t.masters:
            os.close(fd)


def _observe(db: Path, seconds: float) -> dict[str, object]:
    exe = Path(sys.executable).parent / "frontdesk"
    out = subprocess.run(
        [str(exe), "observe", "--hz", "5", "--duration", str(seconds), "--out", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _score(db: Path, trees: Trees) -> float:
    rows = sqlite3.connect(db).execute("SELECT pid, actor, harness, comm, ancestry FROM processes").fetchall()
    got = {pid: (actor, harness) for pid, actor, harness, *_ in rows}
    assert len(trees.expected) >= 80
    wrong = {p: (w, got.get(p)) for p, w in trees.expected.items() if got.get(p, ("excluded", None)) != w}
    rate = 1 - len(wrong) / len(trees.expected)
    if rate < 0.99:
        detail = {pid: r[3:] for r in rows for pid in wrong if r[0] == pid}
        print("wrong:", wrong, detail)
    return rate


def test_trees_born_while_observing_are_attributed(tmp_path: Path) -> None:
    db = tmp_path / "observe.db"
    exe = Path(sys.executable).parent / "frontdesk"
    observer = subprocess.Popen(
        [str(exe), "observe", "--duration", "300", "--out", str(db), "--json"], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.5)  # after its first full listing: the trees below are found by the pid-range reads
        with spawn_trees(tmp_path) as trees:
            time.sleep(1.0)  # five more samples after the last tree is up
            observer.terminate()  # SIGTERM: the run ends cleanly, everything seen is stored
            out, _ = observer.communicate(timeout=30)
            assert observer.returncode == 0, out
            assert json.loads(out)["ticks"] >= 5
            assert _score(db, trees) >= 0.99
    finally:
        if observer.poll() is None:
            observer.kill()
            observer.wait()


def test_attribution_on_real_trees_is_at_least_99_percent(trees: Trees, tmp_path: Path) -> None:
    db = tmp_path / "observe.db"
    summary = _observe(db, 1.2)
    assert summary["ticks"] >= 5
    assert _score(db, trees) >= 0.99
    assert db.stat().st_mode & 0o777 == 0o600  # every user's commands: its owner's eyes only
    rows = sqlite3.connect(db).execute("SELECT pid, actor, harness, argv, tty, ancestry FROM processes").fetchall()
    got = {pid: (actor, harness) for pid, actor, harness, *_ in rows}
    right = sum(1 for pid, want in trees.expected.items() if got.get(pid, ("excluded", None)) == want)
    assert len(trees.expected) >= 80
    wrong = {
        pid: (want, got.get(pid)) for pid, want in trees.expected.items() if got.get(pid, ("excluded", None)) != want
    }
    assert right / len(trees.expected) >= 0.99, wrong
    argvs = "\n".join(r[3] for r in rows)
    assert FAKE_KEY not in argvs and "«redacted:" in argvs
    person_rows = [r for r in rows if r[1] == "person"]
    assert person_rows and all(r[4] != 0 for r in person_rows)  # on the pty
    assert any("claude" in json.loads(r[5]) for r in rows if r[2] == "claude-code")


def test_a_process_is_recorded_once_across_runs(trees: Trees, tmp_path: Path) -> None:
    db = tmp_path / "observe.db"
    _observe(db, 0.5)
    _observe(db, 0.5)
    con = sqlite3.connect(db)
    dupes = con.execute("SELECT COUNT(*) FROM (SELECT 1 FROM processes GROUP BY host, pid HAVING COUNT(*) > 1)")
    assert dupes.fetchone()[0] == 0
    assert con.execute("SELECT COUNT(*) FROM runs WHERE ended IS NOT NULL").fetchone()[0] == 2


@pytest.mark.parametrize("argv", [["--hz", "6"], ["--hz", "0"], ["--duration", "-1"], ["--hz", "x"]])
def test_bad_flags_get_one_line_and_exit_2(argv: list[str], tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "frontdesk"
    out = subprocess.run([str(exe), "observe", *argv, "--out", str(tmp_path / "o.db")], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("frontdesk: ")
    assert not (tmp_path / "o.db").exists()
