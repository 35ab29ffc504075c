"""Facility insight (issue 16): who runs what on a login node, agents against people.

- `procfs`: reads one process from /proc (stat, argv, cwd, uid, the agent markers of its environment).
- `attribution`: pure: a process and its parent's attribution -> agent harness, person, or excluded.
- `classify`: pure: an argv -> the command classes the paper counts (file tools, build, scheduler, ...).
- `sampler`: the 5 Hz sampler: new processes once (pid + start time), dead pids evicted.
- `store`: the SQLite file `frontdesk observe` writes and `frontdesk analyze` reads.
"""
