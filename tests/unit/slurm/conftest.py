"""Golden-file helper for the Slurm unit tests (UPDATE_GOLDEN=1 rewrites them, to review in the diff)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "slurm"


class Golden:
    """Compares text with tests/golden/slurm/NAME."""

    def check(self, name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("UPDATE_GOLDEN"):
            path.write_text(text)
        assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1 and review it"
        assert text == path.read_text()


@pytest.fixture
def golden() -> Golden:
    """The golden-file checker."""
    return Golden()
