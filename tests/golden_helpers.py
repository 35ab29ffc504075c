"""The shape of a command's `--json` answer (keys and types, not the values that change from run to run), checked
against a reviewed golden file in tests/golden (FRONTDESK_REGEN_GOLDEN=1 rewrites it on purpose)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["check_shape", "shape"]


def shape(value: Any) -> Any:
    """Keys and types, not values; a list by its first item."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return None if value is None else type(value).__name__


def check_shape(path: Path, data: Any) -> None:
    """`data`'s shape is the one in the golden file `path` (`<name>.json`)."""
    rendered = json.dumps(shape(data), indent=2, sort_keys=True) + "\n"
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.write_text(rendered)
    assert rendered == path.read_text(), f"{path.stem} --json schema changed; regenerate on purpose and review"
