"""The failure classifier with the secret scanner wired in: lines are redacted before anything reads them.

The classifier and its catalog live in `frontdesk.reports.classify` (reports share the vocabulary);
this module is what the failure memory, its CLI and its API call.
"""

from __future__ import annotations

from frontdesk.guard.secrets import redact
from frontdesk.reports.classify import (
    Catalog,
    KindInfo,
    Matcher,
    Signature,
    load_catalog,
    normalise,
    parse_catalog,
)
from frontdesk.reports.classify import classify as _classify

__all__ = ["Catalog", "KindInfo", "Matcher", "Signature", "classify", "load_catalog", "normalise", "parse_catalog"]


def classify(
    text: str, state: str | None = None, exit_code: int | None = None, catalog: Catalog | None = None
) -> Signature:
    """Classify one ending from its log text and end state, the text redacted first (never lower-cased)."""
    return _classify(text, state, exit_code, catalog, redact=redact)
