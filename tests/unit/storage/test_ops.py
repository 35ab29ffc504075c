"""Operators in-process: paging with a cursor, the listing cache and its invalidation, the budget (fake clock)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.errors import ConfigError, RateLimited, UserError
from frontdesk.storage.budget import Budget, BudgetConfig
from frontdesk.storage.fs import Fs
from frontdesk.storage.model import Op
from frontdesk.storage.ops import FsRequest, run


def _tree(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"d{i % 3}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_text("".join(f"hit {j}\n" if j % 2 else f"miss {j}\n" for j in range(i % 5)))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 12), limit=st.integers(1, 7), op=st.sampled_from(["grep", "find", "wc", "du", "head", "wc2"]))
def test_pages_joined_by_their_cursors_are_the_whole_answer(
    tmp_path_factory: pytest.TempPathFactory, n: int, limit: int, op: str
) -> None:
    root = tmp_path_factory.mktemp("t")
    _tree(root, n)
    argv = {"grep": ["-n", "hit", "."], "find": ["."], "wc": ["."], "du": ["-a", "."], "head": ["-n", "2", "."]}.get(
        op,
        ["d2", "d0"],  # two roots, the later one first in sort order
    )
    op = op.rstrip("2")
    before = os.getcwd()  # the suite runs in one process: later tests must not start in this temporary tree
    os.chdir(root)
    try:
        whole = run(FsRequest(Op(op), tuple(argv), str(root), limit=100000), Fs())
        pages, cursor = [], None
        for _ in range(200):
            page = run(FsRequest(Op(op), tuple(argv), str(root), limit=limit, cursor=cursor), Fs())
            assert len(page.items) <= limit
            pages.extend(page.items)
            cursor = page.cursor
            if cursor is None:
                break
    finally:
        os.chdir(before)
    assert pages == whole.items


def test_a_cursor_from_another_question_is_refused(tmp_path: Path) -> None:
    _tree(tmp_path, 6)
    page = run(FsRequest(Op.FIND, (str(tmp_path),), "/", limit=2), Fs())
    assert page.cursor is not None
    with pytest.raises(UserError, match="another question"):
        run(FsRequest(Op.FIND, (str(tmp_path), "-type", "f"), "/", limit=2, cursor=page.cursor), Fs())
    with pytest.raises(UserError, match="bad --cursor"):
        run(FsRequest(Op.FIND, (str(tmp_path),), "/", limit=2, cursor="not-a-cursor!"), Fs())


def test_an_unchanged_tree_is_listed_from_the_cache_and_a_change_is_seen_at_once(tmp_path: Path) -> None:
    _tree(tmp_path, 9)
    fs = Fs()
    ask = lambda: run(FsRequest(Op.FIND, (str(tmp_path), "-name", "*.txt"), "/"), fs)  # noqa: E731
    first, second = ask(), ask()
    assert first.stats["readdir"] == 4 and second.stats["readdir"] == 0 and second.stats["cache_hits"] == 4
    assert second.items == first.items
    (tmp_path / "d1" / "new.txt").write_text("")
    third = ask()
    assert third.stats["readdir"] == 1  # only the changed directory is read again
    assert f"{tmp_path}/d1/new.txt" in [i.path for i in third.items]  # type: ignore[union-attr]
    os.rename(tmp_path / "d1" / "new.txt", tmp_path / "d2" / "moved.txt")
    names = [i.path for i in ask().items]  # type: ignore[union-attr]
    assert f"{tmp_path}/d2/moved.txt" in names and f"{tmp_path}/d1/new.txt" not in names


def test_the_budget_admits_charges_refuses_with_retry_after_and_refills() -> None:
    budget = Budget(BudgetConfig(rate=10, burst=100))
    alice, bob = ("alice", "s1"), ("bob", "-")
    budget.admit(alice, 0.0)
    budget.charge(alice, 150, 0.0)  # a big walk: paid in full, the bucket is in debt
    with pytest.raises(RateLimited) as err:
        budget.admit(alice, 1.0)
    assert err.value.fields["retry_after"] == pytest.approx(4.1)
    assert err.value.exit_code == 75 and err.value.http_status == 429
    budget.admit(bob, 1.0)  # another principal is not touched
    budget.admit(alice, 5.2)
    rows = {(r["user"], r["session"]): r for r in budget.counters(5.2)}
    assert rows[alice]["refused"] == 1 and rows[alice]["admitted"] == 2 and rows[alice]["spent"] == 150


def test_a_users_sessions_share_its_own_bucket_and_session_buckets_are_bounded() -> None:
    from frontdesk.storage.budget import MAX_TALLIES

    budget = Budget(BudgetConfig(rate=10, burst=100, user_rate=10, user_burst=250))
    for i in range(3):  # new session names: each a full session bucket, but one user bucket under them all
        budget.admit(("alice", f"s{i}"), 0.0)
        budget.charge(("alice", f"s{i}"), 90, 0.0)
    with pytest.raises(RateLimited, match="all sessions"):
        budget.admit(("alice", "s-new"), 0.0)
    budget.admit(("bob", "s0"), 0.0)  # another user is not touched
    for i in range(MAX_TALLIES + 500):  # a flood of names never grows the table past the bound
        budget.admit(("carol", f"n{i}"), 1000.0 + i)
    assert len(budget.tallies) <= MAX_TALLIES
    budget.charge(("bob", "s0"), 500, 10_000.0)  # in debt: never dropped (its debt would be forgiven)
    for i in range(MAX_TALLIES + 10):
        budget.admit(("carol", f"m{i}"), 10_000.0)
    assert ("bob", "s0") in budget.tallies


@pytest.mark.parametrize("section", [{"rate": 0}, {"burst": "many"}, {"rate": True}, {"rate": float("inf")}])
def test_a_bad_storage_section_is_a_config_error(section: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"\[storage\]"):
        BudgetConfig.from_section(section)


@pytest.mark.parametrize(
    ("op", "argv", "message"),
    [
        (Op.GREP, ("(",), "bad pattern"),
        (Op.FIND, (".", "-type", "x"), "unknown type"),
        (Op.HEAD, ("-n", "ten", "f"), "expected a number"),
        (Op.TAIL, ("--lines", "5:2", "f"), "empty range"),
        (Op.GREP, (), "the following arguments are required"),
    ],
)
def test_bad_flags_are_one_line_user_errors(op: Op, argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UserError, match=message):
        run(FsRequest(op, argv, "/"), Fs())


def _watched() -> Fs:
    from frontdesk.storage.watch import Watcher

    return Fs(watcher=Watcher())


def test_with_inotify_an_unchanged_tree_costs_no_metadata_operation_and_every_change_is_seen(tmp_path: Path) -> None:
    _tree(tmp_path, 12)
    fs = _watched()
    grep = lambda: run(FsRequest(Op.GREP, ("-c", "hit", str(tmp_path)), "/"), fs)  # noqa: E731
    first, second = grep(), grep()
    # the files, their 3 directories, and those again for the content cache's link-count check (settle)
    assert first.stats["open"] == 12 + 3 + 3 and second.items == first.items
    assert {k: v for k, v in second.stats.items() if k != "cache_hits"} == {"readdir": 0, "stat": 1, "open": 0}
    with open(tmp_path / "d0" / "f0.txt", "a") as fh:  # content only
        fh.write("hit late\n")
    third = grep()
    assert (f"{tmp_path}/d0/f0.txt", 1) in [(i.path, i.count) for i in third.items]  # type: ignore[union-attr]
    assert third.stats["open"] == 4 + 1 + 1  # only the files of the directory that changed are read again


def test_with_inotify_a_renamed_directory_never_serves_its_old_subtree(tmp_path: Path) -> None:
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "old.txt").write_text("hit old\n")
    fs = _watched()
    find = lambda: sorted(i.path for i in run(FsRequest(Op.FIND, (str(tmp_path),), "/"), fs).items)  # type: ignore[union-attr]  # noqa: E731
    find()
    find()
    os.rename(tmp_path / "x", tmp_path / "z")
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "new.txt").write_text("hit new\n")
    names = find()
    assert f"{tmp_path}/x/y/new.txt" in names and f"{tmp_path}/x/y/old.txt" not in names
    assert f"{tmp_path}/z/y/old.txt" in names
    (tmp_path / "x" / "y" / "later.txt").write_text("")  # the new x/y is watched too
    assert f"{tmp_path}/x/y/later.txt" in find()
    (tmp_path / "x" / "y").chmod(0o700)  # a permission change drops the trust as well
    assert run(FsRequest(Op.FIND, (str(tmp_path),), "/"), fs).stats["readdir"] >= 1


def test_a_symlink_the_caller_names_is_followed_and_one_met_below_is_not(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("hit\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.txt").symlink_to(tmp_path / "real.txt")
    named = run(FsRequest(Op.GREP, ("-l", "hit", str(tmp_path / "sub" / "link.txt")), "/"), Fs())
    assert [i.path for i in named.items] == [f"{tmp_path}/sub/link.txt"]  # type: ignore[union-attr]
    below = run(FsRequest(Op.GREP, ("-l", "hit", str(tmp_path / "sub")), "/"), Fs())
    assert below.items == [] and below.errors == []
