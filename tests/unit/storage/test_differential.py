"""The operators answer what grep -r / rg / find / du / wc / head / tail answer, on generated trees.

Both sides run as a non-root test user (fdh10) so that an unreadable directory is really unreadable: the real
tools through `subprocess(user=...)`, the operators through the storage worker (started as root, it drops to
the user, as the gateway starts it). Trees hold text and binary files, symlinks to files and directories, a
directory the user cannot read, and names that are not UTF-8. Output order differs (grep/find use readdir
order, the operators sort), so line sets are compared; per-file outputs (context lines, head, tail) exactly.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debian import need
from unix_users import ensure_user

USER = "fdh10"
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create the test user")


@pytest.fixture(scope="module")
def user() -> pwd.struct_passwd:
    return ensure_user(USER, home=False)


class Worker:
    def __init__(self, pw: pwd.struct_passwd) -> None:
        argv = [sys.executable, "-P", "-m", "frontdesk.storage.worker", "--uid", str(pw.pw_uid)]
        argv += ["--gid", str(pw.pw_gid), "--user", pw.pw_name]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, op: str, argv: list[str], cwd: str, **kw: object) -> dict[str, object]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, "argv": argv, "cwd": cwd, **kw}) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, object] = json.loads(self.proc.stdout.readline())
        return answer


@pytest.fixture(scope="module")
def worker(user: pwd.struct_passwd) -> Iterator[Worker]:
    w = Worker(user)
    yield w
    assert w.proc.stdin is not None and w.proc.stdout is not None
    w.proc.stdin.close()
    w.proc.wait(10)
    w.proc.stdout.close()


NAMES = st.sampled_from(["a", "b.txt", "c d.txt", ".hidden", "x\udcffy.txt", "sub", "z.py", "ä.txt"])
LINES = st.lists(st.sampled_from(["foo", "Foo bar", "barfoo", "", "baz qux", "foo foo", "zzz"]), max_size=8)
FILE = st.tuples(st.lists(NAMES, min_size=1, max_size=3), LINES, st.booleans(), st.booleans())


def _build(root: Path, files: list[tuple[list[str], list[str], bool, bool]], links: bool) -> None:
    for parts, lines, binary, nl in files:
        path = root.joinpath(*parts[:-1])
        if any(p.is_file() or p.is_symlink() for p in [path, *path.parents] if str(p).startswith(str(root))):
            continue
        path.mkdir(parents=True, exist_ok=True)
        target = path / parts[-1]
        if target.exists() or target.is_symlink():
            continue
        body = "\n".join(lines).encode("utf-8", "surrogateescape") + (b"\n" if nl and lines else b"")
        target.write_bytes((b"\0" if binary else b"") + body)
    if links:
        (root / "link-to-dir").symlink_to(root)
        (root / "link-to-file").symlink_to(root / "none-yet")
        (root / "locked").mkdir()
        (root / "locked" / "secret.txt").write_bytes(b"foo secret\n")
        (root / "locked").chmod(0o000)


@pytest.fixture()
def tree_root(user: pwd.struct_passwd) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="h10-diff-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _tool(pw: pwd.struct_passwd, argv: list[str], cwd: Path) -> bytes:
    res = subprocess.run(
        argv, cwd=cwd, env=ENV, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], capture_output=True, timeout=60
    )
    return res.stdout


def _ours(worker: Worker, op: str, argv: list[str], cwd: Path) -> bytes:
    answer = worker.ask(op, argv, str(cwd), limit=100000)
    assert "error" not in answer, answer
    assert answer["cursor"] is None
    return str(answer["text"]).encode("utf-8", "surrogateescape")


def _lines(out: bytes) -> list[bytes]:
    return sorted(out.splitlines())


def _fresh(root: Path, i: int) -> Path:
    d = root / f"t{i}"
    d.mkdir()
    d.chmod(0o755)
    return d


CASES = [
    (["grep", "-rI", "-n", "foo", "t"], ["-n", "foo", "t"]),
    (["grep", "-rI", "-l", "foo", "t"], ["-l", "foo", "t"]),
    (["grep", "-rI", "-i", "-F", "foo bar", "t"], ["-i", "-F", "foo bar", "t"]),
    (["grep", "-rI", "-w", "-n", "foo", "t"], ["-w", "-n", "foo", "t"]),
    (
        ["grep", "-rI", "-n", "--include=*.txt", "--exclude-dir=sub", "ba[rz]", "t"],
        ["-n", "--include=*.txt", "--exclude-dir=sub", "ba[rz]", "t"],
    ),
    # regexes: the required-literal prefilter, the whole-file line search, and its per-line fallback when a
    # match spans a newline ([^x] and \s match one in Python, never in grep's lines)
    (["grep", "-rI", "-n", "-E", "fo+ ba|zz+", "t"], ["-n", "fo+ ba|zz+", "t"]),
    (["grep", "-rI", "-n", "-E", "foo[^x]*bar", "t"], ["-n", "foo[^x]*bar", "t"]),
    (["grep", "-rI", "-n", "-E", "(foo|baz)[[:space:]]*q?", "t"], ["-n", "(foo|baz)\\s*q?", "t"]),
    (["grep", "-rI", "-w", "-l", "-E", "foo|qux", "t"], ["-w", "-l", "foo|qux", "t"]),
]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(FILE, max_size=12), links=st.booleans())
def test_grep_find_du_match_the_real_tools(
    tree_root: Path,
    user: pwd.struct_passwd,
    worker: Worker,
    files: list[tuple[list[str], list[str], bool, bool]],
    links: bool,
) -> None:
    case = tree_root / f"c{len(list(tree_root.iterdir()))}"
    case.mkdir()
    case.chmod(0o755)
    t = case / "t"
    t.mkdir()
    _build(t, files, links)
    for theirs, ours in CASES:
        assert _lines(_ours(worker, "grep", ours, case)) == _lines(_tool(user, theirs, case)), theirs
    counts = [ln for ln in _tool(user, ["grep", "-rI", "-c", "foo", "t"], case).splitlines() if not ln.endswith(b":0")]
    assert _lines(_ours(worker, "grep", ["-c", "foo", "t"], case)) == sorted(counts)
    if need("rg", "ripgrep"):
        rg = _tool(user, ["rg", "-uu", "-n", "--no-heading", "--no-messages", "foo", "t"], case)
        assert _lines(_ours(worker, "grep", ["-n", "foo", "t"], case)) == _lines(rg)
    for args in (
        ["t"],
        ["t", "-type", "f"],
        ["t", "-maxdepth", "1"],
        ["t", "-name", "*.txt"],
        ["t", "-type", "d", "-mindepth", "1"],
        ["t", "-size", "-1k", "-type", "f"],
    ):
        assert _lines(_ours(worker, "find", args, case)) == _lines(_tool(user, ["find", *args], case)), args
    assert _lines(_ours(worker, "du", ["t"], case)) == _lines(_tool(user, ["du", "t"], case))
    assert _lines(_ours(worker, "du", ["-s", "-b", "t"], case)) == _lines(_tool(user, ["du", "-s", "-b", "t"], case))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES, nl=st.booleans(), n=st.integers(0, 6), ctx=st.integers(0, 2))
def test_per_file_output_matches_head_tail_wc_and_grep_context(
    tree_root: Path, user: pwd.struct_passwd, worker: Worker, lines: list[str], nl: bool, n: int, ctx: int
) -> None:
    f = tree_root / "f.txt"
    f.write_bytes("\n".join(lines).encode() + (b"\n" if nl and lines else b""))
    f.chmod(0o644)
    for ours, theirs in (
        (["head", ["-n", str(n), "f.txt"]], ["head", "-n", str(n), "f.txt"]),
        (["head", ["-n", f"-{n}", "f.txt"]], ["head", "-n", f"-{n}", "f.txt"]),
        (["tail", ["-n", str(n), "f.txt"]], ["tail", "-n", str(n), "f.txt"]),
        (["tail", ["-n", f"+{n}", "f.txt"]], ["tail", "-n", f"+{n}", "f.txt"]),
        (["grep", ["-n", "-C", str(ctx), "foo", "f.txt"]], ["grep", "-H", "-n", "-C", str(ctx), "foo", "f.txt"]),
        (["wc", ["f.txt"]], ["wc", "f.txt"]),
    ):
        mine, real = _ours(worker, ours[0], ours[1], tree_root), _tool(user, theirs, tree_root)  # type: ignore[arg-type]
        if ours[0] in ("head", "tail") and real and not real.endswith(b"\n"):
            real += b"\n"  # the operators end every line they print
        if ours[0] == "wc":
            mine, real = b" ".join(mine.split()), b" ".join(real.split())
        assert mine == real, theirs


def test_an_unreadable_directory_is_an_error_not_an_answer(tree_root: Path, worker: Worker) -> None:
    t = _fresh(tree_root, 0)
    (t / "locked").mkdir()
    (t / "locked" / "s.txt").write_bytes(b"foo\n")
    (t / "locked").chmod(0o700)
    answer = worker.ask("grep", ["-l", "foo", "t0"], str(tree_root))
    assert answer["items"] == []
    assert answer["errors"] == [{"path": "t0/locked", "message": "Permission denied"}]
