"""The typed job core: states, the stored record, and the pure lifecycle (`step`)."""

from frontdesk.jobs.state import SLURM_STATES, TERMINAL_STATES, UNFINISHED_STATES, JobState

__all__ = ["JobState", "SLURM_STATES", "TERMINAL_STATES", "UNFINISHED_STATES"]
