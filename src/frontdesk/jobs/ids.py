"""An object's id as a request names it (a job, an array task's index, a lesson): ASCII digits, nothing else.

pydantic's lax `int` (as Python's `int()`) takes `12_3` as 123, and `+12`, ` 12 `, `12.0`, `true` as ids too:
`12_3` is how Slurm (and frontdesk's own CLI) names task 3 of array 12, so a cancel, a wait, a log read or a
lesson's removal spelt so hit job 123, or another user's job 123 for an admin. `Id` refuses every spelling but
plain digits (a JSON integer, or a string of ASCII digits as a path gives it) with a one-line 400.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

__all__ = ["Id", "digits_only"]


def digits_only(value: object) -> object:
    """The value if it is an integer (not a bool) or a string of ASCII digits; else ValueError saying so."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return value
    shown = repr(value)[:40]
    raise ValueError(f"an id is digits only, got {shown} (an array task is /v1/jobs/N/tasks/I, not N_I)")


Id = Annotated[int, BeforeValidator(digits_only)]
"""A job, task index or lesson id in a route's path or a request's body."""
