"""The argument parser the squeue, sacct and sbatch shims (and the gateway rendering squeue) share; scancel needs
none, so it stays lighter."""

from __future__ import annotations

import argparse
from typing import Any

from frontdesk.backends.slurm.clitext import ShimArgs

__all__ = ["ShimParser"]


class ShimParser(argparse.ArgumentParser):
    """An argument parser that hands what it cannot parse to the real command instead of exiting."""

    def error(self, message: str) -> Any:  # noqa: D102
        raise ShimArgs(message)
