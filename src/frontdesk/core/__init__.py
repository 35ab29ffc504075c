"""The gateway's helpers, one concern a module: preparing an attempt, admitting a job, ending a job."""
