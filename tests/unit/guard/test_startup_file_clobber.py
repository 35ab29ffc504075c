"""Emptying or replacing a user's shell startup, login or ssh access file (~/.bashrc, ~/.profile,
~/.ssh/authorized_keys) is stopped like deleting a protected file; appending to one, reading or copying it
away stays allowed, and a file of the same name outside a home's top stays allowed (strings only, nothing
runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402
from frontdesk.guard.rules import Rule  # noqa: E402

DENIED = [
    "truncate -s 0 ~/.bashrc",
    "> ~/.bashrc",
    ": > ~/.ssh/authorized_keys",
    "cp /dev/null ~/.profile",
    "echo 'exit' > ~/.zshrc",
    "echo hi 2> ~/.bash_profile",
    "rm -f ~/.profile",
    "shred -u ~/.bashrc",
    "truncate -s 0 /home/bob/.profile",
    "> ~/.config/fish/config.fish",
    "printf '' > ~/.ssh/config",
]
ASKED = [
    "mv /tmp/x ~/.bashrc",
    "cp ~/.bashrc.orig ~/.bashrc",
]
ALLOWED = [
    ">> ~/.bashrc",
    "echo 'export PATH=$HOME/bin:$PATH' >> ~/.bashrc",
    "cat ~/.bashrc",
    "source ~/.bashrc",
    "cp ~/.bashrc ~/.bashrc.bak",
    "echo x > ~/project/.profile",
    "echo x > .bashrc",
    "echo x > /tmp/.bashrc",
]


@pytest.mark.parametrize("command", DENIED)
def test_emptying_a_startup_file_is_denied(command: str) -> None:
    verdict = check(command, corpus_context())
    assert (verdict.decision, verdict.rule) == (Decision.DENY, "fs.rm-protected"), command


@pytest.mark.parametrize("command", ASKED)
def test_replacing_a_startup_file_asks(command: str) -> None:
    verdict = check(command, corpus_context())
    assert (verdict.decision, verdict.rule) == (Decision.ASK, "fs.rm-protected"), command


@pytest.mark.parametrize("command", ALLOWED)
def test_appending_reading_or_a_lookalike_is_allowed(command: str) -> None:
    assert check(command, corpus_context()).decision is Decision.ALLOW, command


def test_overwrite_only_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="overwrite_only must be true or false"):
        Rule.from_dict({"id": "x", "reason": "r", "redirect_targets_any": ["home"], "overwrite_only": "yes"}, "t")
