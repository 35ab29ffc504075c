"""The guard's local audit log: one JSON line per ask, deny or traced command, under FRONTDESK_HOME.

The gateway's journal holds the verdicts of job submissions (`guard.verdict` events); this file holds the
verdicts of the hook and `guard check`, which run without a gateway. Never raises.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["append_audit", "audit_path"]


def audit_path(home: str | Path) -> Path:
    """Where the audit log lives."""
    return Path(home) / "guard" / "audit.jsonl"


def append_audit(home: str | Path, record: dict[str, Any]) -> None:
    """Append one record as one line, in a single O_APPEND write (concurrent hooks interleave whole lines)."""
    try:
        path = audit_path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass
