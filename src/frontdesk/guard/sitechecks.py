"""Checks against the site the command runs on: a test partition asked for long or wide work, `kill` of a
frontdesk job's (or another user's) process.

Pure: the partitions and the process lookup come in through the `GuardContext`.
"""

from __future__ import annotations

from frontdesk.durations import parse_slurm_clock
from frontdesk.guard import rules as rules_mod
from frontdesk.guard.model import GuardContext
from frontdesk.guard.shell import Invocation, parse

__all__ = ["job_process", "misused_partition", "walltime_s"]

_SHORT_PURPOSES = ("test", "debug", "interactive", "development")


def job_process(inv: Invocation, ctx: GuardContext) -> str | None:
    """`kill PID` where PID runs a frontdesk job (not this session's own) or another user's process."""
    if inv.program != "kill":
        return None
    words = [w.text for w in inv.args if not w.dynamic]
    pids: list[int] = []
    options = True
    for k, t in enumerate(words):
        if options and t == "--":
            options = False
        elif options and k and words[k - 1] in ("-s", "-n", "--signal"):
            continue  # a signal name or number
        elif t.isdigit() or (t[:1] == "-" and t[1:].isdigit() and (k or not options)):
            pids.append(int(t.lstrip("-")))  # `kill -- -PGID`, `kill -9 -PGID`: the group's leader
    return next((d for d in map(ctx.process_info, [p for p in pids if p > 1][:16]) if d), None)


def walltime_s(text: str) -> int | None:
    """A Slurm time limit in seconds (sbatch's --time rules), None when it cannot be read."""
    try:
        return int(parse_slurm_clock(text))
    except ValueError:
        return None


def misused_partition(
    inv: Invocation, ctx: GuardContext, ruleset: rules_mod.RuleSet, script_text: str | None = None
) -> str | None:
    """Why this sbatch/srun/salloc misuses a test partition (its flags and the script's #SBATCH lines), or None."""
    if inv.program not in ("sbatch", "srun", "salloc") or not ctx.partitions:
        return None
    flags, _ = rules_mod.flags_of(inv, ruleset)
    if script_text:
        for line in script_text.splitlines():
            if line.startswith("#SBATCH"):
                fake = parse("sbatch " + line[len("#SBATCH") :], None).invocations
                if fake:
                    for k, v in rules_mod.flags_of(fake[0], ruleset)[0].items():
                        flags.setdefault(k, v)

    def first(name: str) -> str | None:
        values = [v for v in flags.get(name, []) if v]
        return values[0] if values else None

    part_name = first("partition")
    if part_name is None:
        return None
    for name in part_name.split(","):
        part = ctx.partitions.get(name)
        if part is None or part.purpose not in _SHORT_PURPOSES:
            continue
        wall = walltime_s(first("time") or "")
        nodes = first("nodes")
        if "array" in flags and first("array"):
            return f"job array on the {part.purpose} partition {name}"
        if part.max_time_s and wall and wall > part.max_time_s:
            limit = part.max_time_s // 60
            return f"{wall // 60} min on the {part.purpose} partition {name} (meant for ≤{limit} min)"
        if part.max_nodes and nodes and nodes.split("-")[-1].isdigit() and int(nodes.split("-")[-1]) > part.max_nodes:
            return f"{nodes} nodes on the {part.purpose} partition {name}"
    return None
