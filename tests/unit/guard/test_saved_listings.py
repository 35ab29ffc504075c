"""A listing kept in a file and read back on the same line (or in the same script) is the pipe it stands for.

`ls ~ > l; xargs -a l ...`, `find ROOT > x && xargs CMD < x`, `ls ~ | tee l; cat l | xargs ...`, `rm -rf $(cat l)`,
`$(< l)`, `while read f; do ...; done < l` and `mapfile -t a < l` get the decision the piped form gets, so a home
listed into a file and deleted is denied as `rm -rf ~/*` is, and a build clean through a file stays allowed as
`find . -name '*.o' | xargs rm -f` is. `read f` sets f to the line it is given (it counted as unset: every
`while read f; do rm -f "$f"; done < list` was denied as `fs.rm-unset-var`). Strings only: nothing here runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from frontdesk.guard.checker import check
from frontdesk.guard.model import Decision

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))
from corpus_loader import corpus_context  # noqa: E402

CTX = corpus_context()  # HOME=/home/alice, cwd ~/project, workstation


@pytest.mark.parametrize(
    ("saved", "piped"),
    [
        ("ls ~ > l; xargs -a l -I{} rm -rf ~/{}", "ls ~ | xargs -I{} rm -rf ~/{}"),
        ("ls ~ > l; xargs -a l rm -rf", "ls ~ | xargs rm -rf"),
        ("find ~ -maxdepth 1 > /tmp/x && xargs rm -rf < /tmp/x", "find ~ -maxdepth 1 | xargs rm -rf"),
        ("find ~ -name '*.pyc' > l; xargs rm -f < l", "find ~ -name '*.pyc' | xargs rm -f"),
        ("find . -name '*.o' > objs; xargs rm -f < objs", "find . -name '*.o' | xargs rm -f"),
        ("ls ~ | tee l; cat l | xargs rm -rf", "ls ~ | xargs rm -rf"),
        ("ls -d ~/* > l; rm -rf $(cat l)", "rm -rf $(ls -d ~/*)"),
        ("find ~ -maxdepth 1 > l; rm -rf $(grep -v keep l)", "rm -rf $(find ~ -maxdepth 1 | grep -v keep)"),
        ("ls ~ > l\nfor f in $(cat l); do rm -rf ~/$f; done", "for f in $(ls ~); do rm -rf ~/$f; done"),
        ("squeue -u alice -h -o %i > ids; xargs scancel < ids", "squeue -u alice -h -o %i | xargs scancel"),
        ("ls build > l; xargs -I{} rm -rf build/{} < l", "ls build | xargs -I{} rm -rf build/{}"),
    ],
)
def test_a_listing_read_back_from_a_file_is_judged_as_the_pipe(saved: str, piped: str) -> None:
    got, want = check(saved, CTX), check(piped, CTX)
    assert (got.decision, got.rule) == (want.decision, want.rule), saved


@pytest.mark.parametrize(
    "command",
    [
        "ls -d ~/* > l\nxargs rm -rf < l",  # across a newline
        "ls -d ~/* > l && sudo xargs -a l rm -rf",  # a wrapper around the reader
        "ls -d ~/* > l; echo done; nice -n 5 xargs rm -rf < l",
        "ls -d ~/* >> l; xargs rm -rf < l",
        "ls ~ | grep -v keep | tee /tmp/l > /dev/null; xargs -I{} rm -rf ~/{} < /tmp/l",
        "bash -c 'cd ~ && ls -A > /tmp/l && xargs rm -rf < /tmp/l'",
        'ls -d ~/* > l; readarray -t a < l; rm -rf "${a[@]}"',
        'while read f; do rm -rf "$f"; done <<< "$HOME"',
        "read a b <<< 'rm -rf'; $a $b ~",
        "IFS=, read a b <<< 'rm,-rf'; $a $b ~",
        "ls ~ > l; cp l l2; xargs -I{} rm -rf ~/{} < l2",  # a copy or a move keeps the listing
        "ls ~ > l; mv l /tmp/l2; xargs -I{} rm -rf ~/{} < /tmp/l2",
        "ls ~ > l; sed 's|^|/home/alice/|' l | xargs rm -rf",  # the saved names made paths
        "ls ~ > l; awk '{print \"/home/alice/\" $0}' l | xargs rm -rf",
        "ls ~ > l; bash -c 'while read f; do rm -rf ~/\"$f\"; done' < l",  # code handed on keeps its stdin
    ],
)
def test_a_home_listed_into_a_file_then_deleted_is_denied(command: str) -> None:
    assert check(command, CTX).decision is Decision.DENY, command


@pytest.mark.parametrize(
    "command",
    [
        'while read f; do rm -f "$f"; done < objs',
        'while IFS= read -r f; do rm -f -- "$f"; done < files.txt',
        "find . -name '*.o' > objs && xargs -a objs rm -f",
        "ls ~ > listing.txt; wc -l listing.txt",
        "ls -d ~/* > l; xargs -a l du -sh",
        "find ~ -maxdepth 1 > l; cat l",
        "ls ~ > l; echo new > l; xargs rm -f < l",  # l written again before it is read
    ],
)
def test_reading_a_list_that_deletes_nothing_wide_is_allowed(command: str) -> None:
    got = check(command, CTX)
    assert got.decision is Decision.ALLOW, (command, got.rule)
