"""The discrete-event simulator: replays workloads (SWF, the agent-heavy generator, the validation mix)
through FIFO, EASY backfill and frontdesk's own policy functions, and reports the same metrics for each.
"""

from frontdesk.sim.engine import SimResult, simulate
from frontdesk.sim.metrics import summarize
from frontdesk.sim.workload import AgentMix, SimJob, Workload, agent_day, parse_swf, validation_mix

__all__ = [
    "AgentMix",
    "SimJob",
    "SimResult",
    "Workload",
    "agent_day",
    "parse_swf",
    "simulate",
    "summarize",
    "validation_mix",
]
