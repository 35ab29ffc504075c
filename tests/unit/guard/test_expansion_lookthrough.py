"""Spellings that reach a home directory the guard already knows (strings only, nothing runs): `${HOME%/}` and
the other pattern removals of a known variable, `$PWD` (the shell sets it to the working directory), and
wrappers whose `-c` hides in a flag group (`script -qc`, `su -lc`, `--command=`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402

STOPPED = [
    'rm -rf "${HOME%/}"',
    "rm -rf ${HOME%%/}",
    'rm -rf "${HOME%/*}/alice"',
    'rm -rf "$PWD"/..',
    "rm -rf ${PWD}/../",
    "script -qc 'rm -rf ~' /dev/null",
    "su -lc 'rm -rf ~' alice",
    "script --command='rm -rf ~' /dev/null",
]
ALLOWED = [
    'rm -rf "${PWD}/build"',
    'rm -rf "${HOME%/}/project/build"',
    "script -q -c 'ls ~' /dev/null",
]


@pytest.mark.parametrize("command", STOPPED)
def test_known_paths_behind_expansions_and_flag_groups_are_stopped(command: str) -> None:
    assert check(command, corpus_context()).decision is not Decision.ALLOW, command


@pytest.mark.parametrize("command", ALLOWED)
def test_their_harmless_neighbours_are_allowed(command: str) -> None:
    assert check(command, corpus_context()).decision is Decision.ALLOW, command
