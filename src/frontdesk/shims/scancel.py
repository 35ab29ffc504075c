"""`scancel ID...`: jobs the gateway submitted (array tasks `844_3` and whole arrays `844` too) are cancelled
through it (so it records why and does not retry them); other ids, and any flag, go to the real scancel."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from frontdesk.shims.common import exec_real, fetch_view

__all__ = ["main"]

_QUIET = {"-Q", "--quiet"}
_JOB_OR_TASK = re.compile(r"^\d+(_\d+)?$")
"""`844` (a job, or a whole array) or `844_3` (one task): ours are cancelled through the gateway."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the shim; scancel's exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    ids = [a for a in args_in if a not in _QUIET]
    if not ids or not all(_JOB_OR_TASK.match(a) for a in ids):
        exec_real("scancel", args_in, "flags, step ids or task ranges")
    from frontdesk.client import Client
    from frontdesk.errors import Conflict, FrontdeskError

    try:
        owned = fetch_view().get("frontdesk", {})
    except FrontdeskError as exc:
        exec_real("scancel", args_in, f"gateway unavailable: {exc}")
    client = Client()
    rest = []
    for bid in ids:
        if bid not in owned:
            rest.append(bid)
            continue
        try:
            client.cancel(owned[bid])
        except Conflict:
            pass  # already ended: scancel is quiet about that too
        except FrontdeskError as exc:
            sys.stderr.write(f"scancel: error: frontdesk: {exc.message}\n")
            return 1
    if rest:
        exec_real("scancel", [a for a in args_in if a in _QUIET] + rest)
    return 0
