"""A real gateway on the Slurm lab with the shims `frontdesk shim install` writes (shared by the shim tests).

The root tests/conftest.py is loaded once as a module of its own (its GatewayProc and _kill_leftovers), as a
module-scoped fixture here cannot take the function-scoped `gateway_factory`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SLURM_GATEWAY = '[gateway]\nbackend = "slurm"\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 1.0\n'


@functools.cache
def root_conftest() -> Any:
    """tests/conftest.py as a module (pytest's own conftest module cannot be imported by name)."""
    spec = importlib.util.spec_from_file_location("fd_tests_conftest", Path(__file__).parents[1] / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def shim_gateway(slurm_lab: Path, shims: Path, config: str = SLURM_GATEWAY) -> Iterator[tuple[Any, dict[str, str]]]:
    """A started gateway on the lab (home: a fresh /tmp directory) and the environment with its shims, installed
    in `shims`, first on PATH; stopped after, with any shepherd it left."""
    conftest = root_conftest()
    home = Path(tempfile.mkdtemp(prefix="fd-", dir="/tmp"))
    gw = conftest.GatewayProc(home, config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")}).start()
    try:
        assert gw.cli("shim", "install", str(shims)).returncode == 0
        yield gw, {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
    finally:
        gw.stop()
        conftest._kill_leftovers(home)
