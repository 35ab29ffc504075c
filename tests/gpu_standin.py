"""A stand-in GPU machine for tests where there is no GPU (shared by the GPU tests of integration/ and faults/).

The folder holds the stand-in tests/data/gpu/nvidia-smi (put it on a gateway's PATH), the two 80 GiB devices it
lists (gpus.json) and the NVML stand-in reads (devices), and an empty apps/ folder: a process "holds GPU memory"
while a file apps/<pid> names its device and MiB, as a CUDA program would allocate it. The NVML stand-in
(tests/data/gpu/nvml_standin.c) is built with the system cc; a test needing it is skipped, saying so, without one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "gpu"
MIB_80G = 81920


def gpu_standin(folder: Path, utils: tuple[int, int] = (30, 30)) -> Path:
    """`folder` made a stand-in GPU machine: nvidia-smi, two 80 GiB A100s (utilisation `utils`), empty apps/."""
    (folder / "apps").mkdir(parents=True)
    shutil.copy(DATA / "nvidia-smi", folder / "nvidia-smi")
    (folder / "nvidia-smi").chmod(0o755)
    devices = [
        {"index": i, "name": "NVIDIA A100-SXM4-80GB", "memory_mib": MIB_80G, "util": u} for i, u in enumerate(utils)
    ]
    (folder / "gpus.json").write_text(json.dumps(devices))
    (folder / "devices").write_text("".join(f"{x['index']} {x['memory_mib']} {x['util']}\n" for x in devices))
    return folder


def nvml_standin(folder: Path) -> Path:
    """The stand-in libnvidia-ml.so.1, built with the system cc into a stand-in folder (reads its devices)."""
    import pytest

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) on this machine: the NVML stand-in cannot be built")
    lib = folder / "libnvidia-ml.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(DATA / "nvml_standin.c")], check=True)
    return lib


def on_path(folder: Path) -> dict[str, str]:
    """A gateway environment with the stand-in nvidia-smi first on PATH."""
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def smi_calls(folder: Path) -> str:
    """Every call the stand-in nvidia-smi answered (one line each), "" when it never ran."""
    args = folder / "nvidia-smi.args"
    return args.read_text() if args.exists() else ""


def held_until_released(flags: Path, name: str) -> list[str]:
    """A job that writes the devices it was given to flags/<name>.dev, then runs until flags/<name>.go exists."""
    dev, go = shlex.quote(str(flags / f"{name}.dev")), shlex.quote(str(flags / f"{name}.go"))
    return ["/bin/sh", "-c", f'echo "$CUDA_VISIBLE_DEVICES" > {dev}; while [ ! -e {go} ]; do sleep 0.05; done']
