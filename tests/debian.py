"""Debian tools a test compares against (ripgrep, Chromium): installed when missing, as the Slurm lab is.

`need(command, *packages)` is the command's path. When it is missing and this is root on Debian, the packages are
installed once (`apt-get install`, after an `apt-get update` if the first try fails; apt's own lock is waited for,
so pytest processes side by side are safe). It is None only where that cannot be done (not root, no apt-get, no
package registry): the caller skips, saying so. CI runs as root, so there these tests always run.
"""

from __future__ import annotations

import os
import shutil
import subprocess

_APT = ("apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=600", "install", "--no-install-recommends")
_tried: set[tuple[str, ...]] = set()


def need(command: str, *packages: str) -> str | None:
    found = shutil.which(command)
    if found or os.geteuid() != 0 or not shutil.which("apt-get") or packages in _tried:
        return found
    _tried.add(packages)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for first in (True, False):
        if not first:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
        done = subprocess.run([*_APT, *packages], env=env, capture_output=True, timeout=900)
        if done.returncode == 0:
            break
    return shutil.which(command)
