"""The simulator's built-in SWF policy: the agent lane scales with the machine; `frontdesk-sliceN` adds a slice."""

from __future__ import annotations

import pytest

from frontdesk.sim.compare import make_policy
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import SimJob, Workload


def swf(procs: int) -> Workload:
    return Workload("t", [SimJob("j1", 0.0, 60.0, 60.0, 1, "u")], 0.0, None, "swf", Machine(procs, procs, "t"))


@pytest.mark.parametrize(("procs", "lane"), [(256, 8), (128, 4), (16, 1)])
def test_the_default_lane_is_a_32nd_of_the_machine(procs: int, lane: int) -> None:
    pool = make_policy("frontdesk", swf(procs)).cfg.pools[0]
    assert (pool.agent_max_cores, pool.agent_cores) == (lane, 0)


def test_a_slice_spec_keeps_that_many_cores() -> None:
    pol = make_policy("frontdesk-slice16", swf(256))
    assert pol.name == "frontdesk-slice16"
    assert pol.cfg.pools[0].agent_cores == 16


@pytest.mark.parametrize("spec", ["frontdesk-slice", "frontdesk-slice0", "frontdesk-slicex"])
def test_a_bad_slice_spec_is_refused_in_one_line(spec: str) -> None:
    with pytest.raises(ValueError, match="frontdesk-sliceN"):
        make_policy(spec, swf(256))
