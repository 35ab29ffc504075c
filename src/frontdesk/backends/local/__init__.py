"""The embedded backend: runs jobs as local processes, each under a shepherd, with real resource accounting.

- `backend.py`: `LocalBackend` (the queue, resources and GPU assignment, the scheduling loop);
- `scheduling.py`: what schedulers see and decide (`QueuedJob`, `FreeResources`, `greedy_pick`); pure;
- `files.py`: the attempt folder `<home>/local/<backend id>/` shared with the shepherd (backends/shepherd.py);
- `procs.py`: starting a detached shepherd, telling whether it has ended (a shepherd from shepherd.pid: by
  its start time too, `frontdesk/procid.py`);
- `lending.py` (pure) and `suspending.py`: trials started on the cores of jobs they suspend (`[policy.suspend]`).
"""

from frontdesk.backends.local.backend import LocalBackend
from frontdesk.backends.local.scheduling import FreeResources, QueuedJob, Scheduler, greedy_pick, take_gpus
from frontdesk.backends.localgpu import detect_gpus

__all__ = ["FreeResources", "LocalBackend", "QueuedJob", "Scheduler", "detect_gpus", "greedy_pick", "take_gpus"]
