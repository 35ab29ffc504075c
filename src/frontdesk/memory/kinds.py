"""The failure kinds (`FailureKind`), defined with the reports that share them."""

from __future__ import annotations

from frontdesk.reports.kinds import FailureKind

__all__ = ["FailureKind"]
