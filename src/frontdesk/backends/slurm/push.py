"""How Slurm's job ends reach a gateway without waiting for its tick.

On a site with a facility gateway (its config says `[gateway] mode = "facility"`), a user's gateway subscribes
to it (facility_subscribe.py) and registers nothing with the controller. Elsewhere (a single-user machine, the
lab) the older path stays: the gateway writes its socket into `notify_dir`, where `frontdesk notify
--targets-dir` (EpilogSlurmctld) finds it. That path is deprecated where a facility gateway runs: the
directory must be writable by every gateway's user, so anyone can make the controller connect anywhere.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from frontdesk.backends.base import PushHint
from frontdesk.backends.slurm.config import SlurmConfig, notify_dir_from
from frontdesk.facility_subscribe import Subscription, facility_target

__all__ = ["PushIntake"]

log = logging.getLogger("frontdesk.slurm")


class PushIntake:
    """The facility subscription, else a registration in `notify_dir`; `stop()` undoes either."""

    def __init__(self, settings: Any, config: SlurmConfig) -> None:
        self.settings = settings
        self.config = config
        self.registration: Path | None = None
        self.subscription: Subscription | None = None

    def start(self, push: PushHint) -> None:
        """Subscribe to the site's facility gateway, else register for `frontdesk notify --targets-dir`."""
        facility = facility_target(self.settings.mode, self.settings.socket)
        if facility is not None:
            self.subscription = Subscription(facility.socket, self.settings.home, push, facility.url).start()
        else:
            self._register()

    async def stop(self) -> None:
        """End the subscription / remove the registration; Slurm jobs keep running."""
        if self.subscription is not None:
            await self.subscription.stop()
            self.subscription = None
        if self.registration is not None:
            self.registration.unlink(missing_ok=True)
            self.registration = None

    def _register(self) -> None:
        where = notify_dir_from(self.config)
        if where is None:
            log.info("no notify dir: job ends reach this gateway on the next tick only")
            return
        socket = str(self.settings.socket)
        name = hashlib.sha1(socket.encode()).hexdigest()[:16]
        try:
            where.mkdir(parents=True, exist_ok=True)
            path = where / name
            path.write_text(socket + "\n")
            self.registration = path
        except OSError as exc:
            log.warning("cannot register for pushes in %s: %s", where, exc)
