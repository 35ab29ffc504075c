"""The guard reads the scripts a job names: never blocking on a FIFO (the gateway must stay up), and on a root
gateway only what the submitting user could read.

Safety: the script lines are canaries (`mkfs.ext4` on a device that does not exist), refused by the same rule
as a real wipe and harmless if they ran; the FIFO job is cancelled at the end.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from frontdesk.errors import FrontdeskError
from frontdesk.guard.context import read_text_file

CANARY = "mkfs.ext4 /dev/fd-does-not-exist-canary"


def test_a_fifo_named_as_a_script_never_stalls_the_gateway(gateway: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "job.sh"
    os.mkfifo(fifo)
    answers: list[Any] = []

    def submit() -> None:
        try:
            answers.append(gateway.client.submit(spec={"command": ["bash", str(fifo)]}, context={"cwd": str(tmp_path)}))
        except FrontdeskError as exc:
            answers.append(exc)

    t = threading.Thread(target=submit, daemon=True)
    t.start()
    t.join(timeout=60)
    try:
        assert isinstance(answers[0], dict), f"the gateway's guard blocked on a FIFO: {answers}"
        assert gateway.client.health()["ok"]
    finally:
        try:  # let a stuck reader go so the gateway can stop
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    job = answers[0]
    if isinstance(job, dict):
        gateway.client.request("POST", f"/v1/jobs/{job['id']}/cancel", {})


def test_the_guard_reads_a_script_for_another_uid_only_where_that_user_could(tmp_path: Path) -> None:
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="fdguardscripts-", dir="/tmp"))  # tmp_path's parents are root's 0700
    d.chmod(0o755)
    try:
        _reads_for_another_uid(d, d / "run.sh")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _reads_for_another_uid(d: Path, script: Path) -> None:
    script.write_text(f"#!/bin/bash\n{CANARY}\n")
    script.chmod(0o600)
    assert read_text_file(str(script)) is not None  # the gateway's own user, as before
    if os.geteuid() == 0:
        assert read_text_file(str(script), uid=4242) is None  # root-only: that user's job could not read it either
        script.chmod(0o604)
        assert read_text_file(str(script), uid=4242) is not None  # world-readable: scanned
        script.chmod(0o600)
        os.chown(script, 4242, 4242)
        assert read_text_file(str(script), uid=4242) is not None  # their own file: scanned
        d.chmod(0o700)  # ... in a directory they cannot enter (root's): not theirs to read after all
        assert read_text_file(str(script), uid=4242) is None
