"""The README is the front door: its two commands are what CI runs, and its tours name real commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text()


def _sh_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", README, flags=re.S)]


def test_first_command_installs_and_runs_the_demo() -> None:
    first = _sh_blocks()[0]
    assert "pip install -e ." in first and first.endswith("frontdesk demo")


def test_second_command_is_what_ci_runs() -> None:
    second = _sh_blocks()[1]
    assert "'.[dev]'" in second and second.endswith("pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    # .ci/run runs exactly the README's second command (it may start services first).
    assert second.replace("pip install -e", "pip install -q -e") in ci or second in ci


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= 120


def test_every_command_in_the_tours_exists() -> None:
    words: set[tuple[str, str | None]] = set()
    for block in _sh_blocks()[2:]:
        for m in re.finditer(r"frontdesk ([a-z]+)(?: ([a-z]+))?", block):
            words.add((m.group(1), m.group(2)))
    assert words
    for command, sub in sorted(words, key=str):
        # A group with sub-commands refuses an unknown one (exit 2); a command with a positional takes it.
        args = [sys.executable, "-m", "frontdesk.cli.main", command, *([sub] if sub else []), "--help"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"frontdesk {command} {sub or ''}: {proc.stderr.strip()}"
        assert proc.stdout.startswith("usage: frontdesk"), proc.stdout[:200]


def test_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / target).exists(), target
