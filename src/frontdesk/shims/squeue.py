"""The `squeue` shim: answered from the gateway's cached view (backends/slurm/squeue_text.py renders it), the
real squeue for anything the view cannot answer or when no gateway runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from frontdesk.backends.slurm.squeue_text import Passthrough, answer
from frontdesk.shims.common import current_user, exec_real, fetch_view, gateway_down

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the shim; returns squeue's exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        answer(args_in, os.environ, "", None)
    except Passthrough as exc:
        exec_real("squeue", args_in, str(exc))
    from frontdesk.errors import FrontdeskError

    try:
        view = fetch_view()
    except FrontdeskError as exc:
        gateway_down("squeue", args_in, exc)
    try:
        rc, out, err = answer(args_in, os.environ, current_user(), view)
    except Passthrough as exc:  # too large an answer to build from the view
        exec_real("squeue", args_in, str(exc))
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc
