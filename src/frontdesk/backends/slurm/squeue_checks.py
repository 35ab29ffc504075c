"""What of an squeue command line the gateway answers from its view, and what it hands to the real squeue
(`Passthrough`): the %-codes it knows, field widths and answer sizes it will build, filter values squeue itself
would refuse. Pure but for the user lookup of `-u`."""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Mapping

from frontdesk.backends.slurm.clitext import LONG_STATES, split_list

__all__ = ["HEADERS", "MAX_ANSWER_CHARS", "MAX_WIDTH", "SPEC", "Passthrough", "check_filters", "check_format"]


class Passthrough(Exception):
    """This command line needs the real squeue (a flag the view cannot answer)."""


SPEC = re.compile(r"%(\.?)(\d*)([A-Za-z%])")
_NOT_RENDERED = frozenset({"%", "L"})
"""Codes squeue prints its own way (`%%` prints N/A and eats what follows; `%L` is cut, the time left)."""
_JOB_ID = re.compile(r"[1-9][0-9]{0,9}(_[0-9]{1,7})?")
"""An id `-j` is answered for from the view; others (0, `abc`, `77_[1-3]`, 20 digits) get squeue's own error."""
MAX_WIDTH = 10_000
"""A wider `%.Ni` field is passed to the real squeue: the gateway renders these answers (and keeps them in
files), so `%.100000000i` would cost it 100 MB a row and `%.99999999999i` a MemoryError."""
MAX_ANSWER_CHARS = 16 << 20
"""A longer answer is passed to the real squeue (many wide fields, many rows): the gateway never builds it."""
HEADERS = {
    "i": "JOBID",
    "A": "JOBID",
    "P": "PARTITION",
    "j": "NAME",
    "u": "USER",
    "t": "ST",
    "T": "STATE",
    "M": "TIME",
    "l": "TIME_LIMIT",
    "D": "NODES",
    "R": "NODELIST(REASON)",
    "r": "REASON",
    "N": "NODELIST",
    "C": "CPUS",
    "m": "MIN_MEMORY",
    "V": "SUBMIT_TIME",
    "S": "START_TIME",
    "e": "END_TIME",
    "b": "TRES_PER_NODE",
    "Z": "WORK_DIR",
    "a": "ACCOUNT",
    "q": "QOS",
    "p": "PRIORITY",
    "Q": "PRIORITY",
    "o": "COMMAND",
    "k": "COMMENT",
    "E": "DEPENDENCY",
    "U": "UID",
    "x": "EXC_NODES",
    "F": "ARRAY_JOB_ID",
    "K": "ARRAY_TASK_ID",
    "g": "GROUP",
    "n": "REQ_NODES",
    "f": "FEATURES",
    "%": "%",
}


def check_format(fmt: str) -> None:
    """Raise Passthrough for a format the view does not answer as squeue would: a field width over
    MAX_WIDTH, a code it does not know (`%z`), `%%`, `%L` or a `%` squeue reads otherwise (`%-5i`)."""
    for m in SPEC.finditer(fmt):
        width, code = m.group(2), m.group(3)
        if width and (len(width) > len(str(MAX_WIDTH)) or int(width) > MAX_WIDTH):
            raise Passthrough(f"a field width over {MAX_WIDTH}")
        if code not in HEADERS or code in _NOT_RENDERED:
            raise Passthrough(f"format code %{code}")
    if "%" in SPEC.sub("", fmt):
        raise Passthrough("a % that is no format code")


_STATE_WORDS = frozenset(LONG_STATES) | frozenset(LONG_STATES.values()) | {"ALL"}


def check_filters(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """Passthrough for filters squeue refuses with its own message (an unknown state, sort key, id or user)."""
    states = args.states or ([environ["SQUEUE_STATES"]] if environ.get("SQUEUE_STATES") else [])
    if any(s.upper() not in _STATE_WORDS for s in split_list(states)):
        raise Passthrough("a job state squeue does not know")
    for key in (k.strip() for k in (args.sort or environ.get("SQUEUE_SORT") or "").split(",")):
        if key and (len(key.lstrip("+-")) != 1 or key.lstrip("+-") not in HEADERS or key.lstrip("+-") == "%"):
            raise Passthrough("a sort key the view does not order by")
    if any(not _JOB_ID.fullmatch(i) for i in split_list(args.jobs)):
        raise Passthrough("a job id squeue refuses")
    for user in split_list(args.user):
        if not _known_user(user):
            raise Passthrough("a user squeue does not know")


@functools.lru_cache(maxsize=1024)
def _known_user(user: str) -> bool:
    import pwd

    try:
        pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, ValueError, OverflowError):
        return False
    return True
