"""Reading the local machine's health sensors (the I/O half of `health.evaluate`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from frontdesk.errors import CommandFailed, FrontdeskError
from frontdesk.policy.config import HealthConfig
from frontdesk.policy.health import HealthReading

__all__ = ["read_local"]


def _gpu_temps() -> tuple[float, ...]:
    from frontdesk import proc

    if shutil.which("nvidia-smi") is None:
        return ()
    try:
        out = proc.run(
            ["nvidia-smi", "--query-gpu=temperature.gpu", "--format=csv,noheader,nounits"], timeout=10
        ).stdout
    except FrontdeskError:
        return ()
    return tuple(float(x) for x in out.split() if x.replace(".", "", 1).isdigit())


def read_local(cfg: HealthConfig, home: Path) -> HealthReading:
    """GPU temperatures (nvidia-smi), free disk under the state directory, and the set command's exit."""
    from frontdesk import proc

    path = Path(cfg.disk_path) if cfg.disk_path else home
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        free = None
    exit_code, output = None, ""
    if cfg.command:
        try:
            res = proc.run(cfg.command, timeout=30, check=False)
            exit_code, output = res.returncode, res.stdout + res.stderr
        except CommandFailed as exc:
            exit_code, output = exc.returncode, exc.stderr
        except FrontdeskError as exc:
            exit_code, output = 127, exc.message
    return HealthReading("local", _gpu_temps(), free, exit_code, output)
