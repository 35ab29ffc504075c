"""The `[slurm]` settings and where a gateway registers for EpilogSlurmctld pushes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError

__all__ = ["DEFAULT_LAB", "SLURM_KEYS", "SlurmConfig", "notify_dir_from"]

DEFAULT_LAB = Path("/var/lib/frontdesk-slurm-lab")


@dataclass(frozen=True)
class SlurmConfig:
    """The `[slurm]` table of frontdesk.toml."""

    partition: str | None = None
    conf: str | None = None
    """SLURM_CONF for every Slurm command (else the environment's / the system's)."""
    accounting: bool | None = None
    """Use sacct for jobs the controller forgot; None: detect at start."""
    refresh_seconds: float = 2.0
    """Oldest snapshot the polling shield is answered from."""
    command_timeout: float = 30.0
    notify_dir: str | None = None
    """Where this gateway registers its socket for `frontdesk notify` (EpilogSlurmctld)."""
    directives: tuple[str, ...] = ()
    """Extra `#SBATCH` lines for every job (e.g. `--account=proj`)."""
    bin_dir: str | None = None
    """Directory holding the real Slurm commands (else PATH)."""
    shards_per_gpu: int = 0
    """GPU shards per GPU (gres.conf `Name=shard`, Slurm 22.05+): a shared-GPU job asks `--gres=shard:N`."""
    view_files: bool = True
    """Keep plain squeue answers rendered in per-user files for the `sh` shim (backends/slurm/views.py)."""

    @classmethod
    def from_settings(cls, settings: Any) -> SlurmConfig:
        """Validate `[slurm]`; a bad value raises ConfigError naming it."""
        raw: Mapping[str, Any] = settings.section("slurm")
        unknown = set(raw) - SLURM_KEYS.keys
        if unknown:
            raise ConfigError(f"[slurm]: unknown setting(s) {sorted(unknown)}")
        values: dict[str, Any] = dict(raw)
        if "directives" in values:
            items = values["directives"]
            if not isinstance(items, list) or not all(isinstance(d, str) for d in items):
                raise ConfigError("[slurm].directives: expected a list of strings")
            values["directives"] = tuple(values["directives"])
        for key, (low, high) in (("refresh_seconds", (0.1, 3600.0)), ("command_timeout", (1.0, 3600.0))):
            value = values.get(key)
            if key in values and (
                isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high
            ):  # nan fails both comparisons; 0 timed every command out, nan made every view a query
                raise ConfigError(f"[slurm].{key}: expected a number of seconds from {low:g} to {high:g}")
        for key in ("accounting", "view_files"):
            if values.get(key) is not None and not isinstance(values[key], bool):
                raise ConfigError(f"[slurm].{key}: expected true or false")
        for key in ("partition", "conf", "notify_dir", "bin_dir"):
            if values.get(key) is not None and (not isinstance(values[key], str) or "\n" in values[key]):
                raise ConfigError(f"[slurm].{key}: expected one line of text")
        if any("\n" in d or "\r" in d for d in values.get("directives", ())):
            raise ConfigError("[slurm].directives: each directive is one line")
        shards = values.get("shards_per_gpu", 0)
        if isinstance(shards, bool) or not isinstance(shards, int) or not 0 <= shards <= 1024:
            raise ConfigError("[slurm].shards_per_gpu: expected a whole number from 0 to 1024")
        if os.environ.get("FRONTDESK_SLURM_CONF") and "conf" not in values:
            values["conf"] = os.environ["FRONTDESK_SLURM_CONF"]
        return cls(**values)


SLURM_KEYS = TableKeys.of("slurm", SlurmConfig.__dataclass_fields__)
"""`[slurm]`: the fields of SlurmConfig."""


def notify_dir_from(config: SlurmConfig) -> Path | None:
    """Where the gateway registers for push: config, FRONTDESK_SLURM_NOTIFY_DIR, else the lab's dir."""
    if config.notify_dir:
        return Path(config.notify_dir)
    if os.environ.get("FRONTDESK_SLURM_NOTIFY_DIR"):
        return Path(os.environ["FRONTDESK_SLURM_NOTIFY_DIR"])
    lab = Path(os.environ.get("FRONTDESK_SLURM_LAB") or DEFAULT_LAB)
    return lab / "gateways" if (lab / "gateways").is_dir() else None
