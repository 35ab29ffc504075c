"""The real agent binaries (tests/harness/node, pinned), as session fixtures for the tests that run them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))

from pinned import pinned  # noqa: E402


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return pinned("claude", "2.1.332 (Claude Code)", "@anthropic-ai/claude-code")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return pinned("codex", "codex-cli 0.171.0", "@openai/codex")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return pinned("gemini", "0.61.0", "@google/gemini-cli")
