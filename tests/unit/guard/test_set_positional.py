"""`set -- WORDS` earlier on the line gives $1, $2 ... and "$@" known values, looked through like a variable
set on the line: `set -- rm -rf ~; "$@"` runs rm -rf ~ (strings only, nothing runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402

STOPPED = [
    ('set -- rm -rf ~; "$@"', "fs.rm-root"),
    ("set -- rm -rf ~; $@", "fs.rm-root"),
    ('set -- rm -rf ~\n"$@"', "fs.rm-root"),
    ("set -- rm -rf /; $1 $2 $3", "fs.rm-root"),
    ('set -- -rf ~; rm "$@"', "fs.rm-root"),
    ('set -e -- rm -rf /; "${@}"', "fs.rm-root"),
    ('set -- rm -rf "$HOME"; "$@"', "fs.rm-root"),
    ('set -- rm -rf ~; eval "$@"', "fs.rm-root"),
]
ALLOWED = [
    'set -euo pipefail; "$@"',
    'set -- ls -la; "$@"',
    'set -- a b; echo "$@"',
    'set -- build; rm -rf "./$1"',
]


@pytest.mark.parametrize(("command", "rule"), STOPPED)
def test_positional_parameters_set_on_the_line_are_looked_through(command: str, rule: str) -> None:
    verdict = check(command, corpus_context())
    assert (verdict.decision, verdict.rule) == (Decision.DENY, rule), command


@pytest.mark.parametrize("command", ALLOWED)
def test_harmless_or_unknown_positional_use_is_allowed(command: str) -> None:
    assert check(command, corpus_context()).decision is Decision.ALLOW, command
