"""A root facility gateway on the embedded backend never runs a program as root with the submitter's
dynamic-loader or Python variables: the root shepherd drops to the user before the job's environment applies.
The canary (tests/integration/facility/loader_canary.py) only creates an empty file named after its uid."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility
from loader_canary import assert_only_the_user_ran_it, canary_fixture, submit_and_end  # noqa: F401


def test_loader_variables_reach_the_job_but_no_root_process(facility: Facility, canary: Any) -> None:
    logs = submit_and_end(facility, canary)
    assert_only_the_user_ran_it(canary, logs)
