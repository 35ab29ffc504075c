"""What of a lesson may travel to a wider scope: every field re-checked for secrets and private paths.

Pure. Text fields (cause, line, template, fix text) are folded and redacted; identity fields (the
signature, the detail, the application, modules and partition) must already be clean, since changing
them would make another lesson: a promotion that still finds a secret or a private path refuses.
"""

from __future__ import annotations

import json
import re
from typing import Any

from frontdesk.errors import Denied
from frontdesk.guard.secrets import find_secrets, redact
from frontdesk.memory.context import scrub_private
from frontdesk.memory.lesson import Lesson

__all__ = ["private_reason", "scrubbed"]

_TEXT_FIELDS = ("cause", "line", "template")
_HOME_LEFT = re.compile(r"(?<![\w.])(?:/home|/Users|/u|/usr/home|/export/home)/[^/\s'\"~]")


def private_reason(text: str, principal: str) -> str | None:
    """Why `text` may not leave the principal's scope (a secret, a home directory, a path naming them)."""
    if find_secrets(text):
        return "a secret"
    if _HOME_LEFT.search(text):
        return "a home directory"
    if principal and re.search(rf"/{re.escape(principal)}(?:/|\b)", text):
        return f"a private path of {principal}"
    return None


def scrubbed(lesson: Lesson, principal: str) -> dict[str, Any]:
    """The shareable fields of a lesson; raises Denied naming the field that still leaks."""
    texts = {key: redact(scrub_private(getattr(lesson, key))) for key in _TEXT_FIELDS}
    fix = lesson.fix
    if fix and fix.get("text"):
        fix = {**fix, "text": redact(scrub_private(str(fix["text"])))}
    checked: dict[str, str] = {
        **texts,
        "signature": lesson.signature,
        "detail": lesson.detail,
        "application": lesson.application,
        "modules": " ".join(lesson.modules),
        "partition": lesson.partition or "",
        "fix": json.dumps(fix) if fix else "",
        "conditions": json.dumps(lesson.conditions),
    }
    for key, text in checked.items():
        why = private_reason(text, principal)
        if why:
            raise Denied(f"lesson {lesson.id} still holds {why} in its {key} after redaction; not promoted")
    evidence = [
        {"job": e.get("job"), "at": e.get("at"), "requested": e.get("requested"), "used": e.get("used")}
        for e in lesson.evidence
    ]
    return {**texts, "fix": fix, "evidence": evidence}
