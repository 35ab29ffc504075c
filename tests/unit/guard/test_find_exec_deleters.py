"""find hands its matches to any deleter, not only `rm`: -exec/-execdir/-ok/-okdir with shred, unlink, rmdir,
a path to rm, or a shell running rm, over a home, root or system tree is stopped like `-exec rm` (strings only,
nothing runs). A narrow find in the working tree stays allowed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402

STOPPED = [
    "find ~ -exec shred {} +",
    "find ~ -exec unlink {} \\;",
    "find ~ -ok rm {} \\;",
    "find / -okdir rm -f {} \\;",
    "find ~ -exec /usr/bin/shred -u {} +",
    "find ~ -exec sh -c 'rm -rf \"$1\"' _ {} \\;",
    "find /etc -execdir rmdir {} +",
    "find /scratch/alice -mtime +30 -exec unlink {} \\;",
]
ALLOWED = [
    "find . -name '*.o' -exec sh -c 'rm -f \"$0\"' {} \\;",
    "find . -name __pycache__ -type d -exec rm -rf {} +",
    "find . -name '*.txt' -exec grep -H pattern {} +",
    "find ~ -name '*.log' -exec ls -la {} +",
]


@pytest.mark.parametrize("command", STOPPED)
def test_find_handing_matches_to_a_deleter_is_stopped(command: str) -> None:
    verdict = check(command, corpus_context())
    assert verdict.decision is not Decision.ALLOW, command
    assert verdict.rule in ("fs.rm-root", "fs.rm-protected"), (command, verdict.rule)


@pytest.mark.parametrize("command", ALLOWED)
def test_narrow_or_harmless_find_exec_is_allowed(command: str) -> None:
    assert check(command, corpus_context()).decision is Decision.ALLOW, command
