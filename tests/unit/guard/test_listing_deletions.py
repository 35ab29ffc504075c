"""Deletion targets computed from a listing of a home, and deletions written in interpreter code.

- A home listed (`ls ~`, `ls -d ~/*`, `find ~ -maxdepth 1`, `$(ls ~)`, `printf '%s\\0' ~/*`,
  `Path.home().iterdir()`, `os.listdir(home)`), filtered by something that keeps (nearly) every entry (`grep -v`,
  sort, `tail -n +2`, a `sed`/`awk` that prefixes the directory), then each entry deleted, is `rm -rf ~/*`: deny;
  `rm -rf $(find ROOT ...)` is the `find ROOT ... -exec rm -rf {} +` it amounts to.
- `shutil.rmtree("build")` (or `os.remove("x")`, `os.system("rm -rf build")`) is judged as the shell's
  `rm -rf build`: the same decision for the same effect; code the guard cannot read still asks.

Strings only: every command here is read by the checker, never run. The rows are the corpus section
"listings and code deletions" (tests/data/guard/corpus.txt), each held to its exact decision.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from frontdesk.guard.checker import check
from frontdesk.guard.model import Decision

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))
from corpus_loader import corpus_context, load_corpus  # noqa: E402

CTX = corpus_context()  # HOME=/home/alice, cwd ~/project, workstation
_MARK = "listings and code deletions"
_LINES = (Path(__file__).resolve().parents[2] / "data" / "guard" / "corpus.txt").read_text().splitlines()
_START = next((n for n, line in enumerate(_LINES, 1) if _MARK in line), len(_LINES) + 1)
CASES = [c for c in load_corpus() if c.line > _START]


def _id(case: object) -> str:
    return str(getattr(case, "command", ""))[:60]


def test_the_section_is_loaded() -> None:
    assert len([c for c in CASES if c.dangerous]) >= 25 and len([c for c in CASES if not c.dangerous]) >= 15


@pytest.mark.parametrize("case", [c for c in CASES if c.dangerous], ids=_id)
def test_a_home_listed_then_deleted_is_denied_and_unread_code_asks(case: object) -> None:
    result = check(case.command, CTX)  # type: ignore[attr-defined]
    want = Decision.ASK if case.rule == "interp.delete" else Decision.DENY  # type: ignore[attr-defined]
    assert (result.decision, result.rule) == (want, case.rule)  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", [c for c in CASES if not c.dangerous], ids=_id)
def test_the_same_deletion_in_code_gets_the_shells_decision(case: object) -> None:
    result = check(case.command, CTX)  # type: ignore[attr-defined]
    assert result.decision is Decision.ALLOW, (case.command, result.rule)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("command", "same_as"),
    [
        ("rm -rf $(find ~ -name '*.pyc')", "find ~ -name '*.pyc' | xargs rm -rf"),
        ("rm -rf $(find ~ | grep cache)", "find ~ | grep cache | xargs rm -rf"),
        ("rm -rf $(find ~/.ssh -name 'id_*')", "find ~/.ssh -name 'id_*' -exec rm -rf {} +"),
        ("rm -rf $(find ~ -maxdepth 1 | grep -v keep)", "rm -rf ~"),
        ("rm -rf $(ls -d ~/* | sort)", "rm -rf ~/*"),
        ("rm -rf $(ls)", "rm -rf *"),
        ("rm -rf $(find . -maxdepth 1 | grep -v keep)", "rm -rf ."),
        ("ls -d ~/* | grep -v keep | xargs rm -rf", "rm -rf ~/*"),
    ],
)
def test_a_listing_in_the_words_is_read_as_the_pipe_or_glob_it_amounts_to(command: str, same_as: str) -> None:
    got, want = check(command, CTX), check(same_as, CTX)
    assert (got.decision, got.rule) == (want.decision, want.rule), command
    assert got.decision is not Decision.ALLOW


@pytest.mark.parametrize(
    ("code", "shell"),
    [
        ('import shutil; shutil.rmtree("build")', "rm -rf build"),
        ('import shutil; shutil.rmtree("/home/alice")', "rm -rf /home/alice"),
        ('import shutil; shutil.rmtree("../other")', "rm -rf ../other"),
        ('import os; os.remove("results.csv")', "rm -f results.csv"),
        ('import os; os.system("rm -rf ~")', "rm -rf ~"),
        ('import os; os.system("rm -rf /scratch/alice")', "rm -rf /scratch/alice"),
    ],
)
def test_code_and_shell_agree(code: str, shell: str) -> None:
    for command in (f"python3 -c '{code}'", f"python3 <<'EOF'\n{code}\nEOF"):
        got, want = check(command, CTX), check(shell, CTX)
        assert (got.decision, got.rule) == (want.decision, want.rule), command
