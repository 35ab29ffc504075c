"""Who a job runs as (frontdesk.backends.runas): identity lookup, refusals, scripts reached by fd."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from frontdesk.backends.runas import RunAs, for_job, job_argv, open_output, script_argv
from frontdesk.errors import BackendError


def test_a_job_with_no_submitter_is_ours_and_an_unknown_principal_is_refused() -> None:
    assert for_job(None, None).uid == os.geteuid()
    with pytest.raises(BackendError, match="no Unix user 'no-such-user-fd'"):
        for_job(None, "no-such-user-fd")
    with pytest.raises(BackendError, match="no Unix user with uid"):
        for_job(2_000_000_000, None)


def test_round_trip_through_launch_json() -> None:
    me = RunAs.of_uid(os.geteuid())
    assert RunAs.from_json(me.to_json()) == me
    assert not me.foreign


@pytest.mark.parametrize(
    ("first_line", "argv"),
    [
        ("#!/bin/sh", ["/bin/sh", "/dev/fd/{fd}"]),
        ("#! /usr/bin/env python3 -u", ["/usr/bin/env", "python3 -u", "/dev/fd/{fd}"]),
    ],
)
def test_a_shebang_script_is_run_as_the_kernel_would(tmp_path: Path, first_line: str, argv: list[str]) -> None:
    script = tmp_path / "script"
    script.write_text(first_line + "\necho hi\n")
    fd = os.open(script, os.O_RDONLY)
    try:
        assert script_argv([str(script)], str(script), fd) == [a.format(fd=fd) for a in argv]
        assert script_argv(["/bin/bash", str(script)], str(script), fd) == ["/bin/bash", f"/dev/fd/{fd}"]
    finally:
        os.close(fd)


def test_own_jobs_keep_their_argv_and_inherit_nothing() -> None:
    me = RunAs.of_uid(os.geteuid())
    assert job_argv(["/bin/bash", "/x/script"], "/x/script", me) == (["/bin/bash", "/x/script"], ())
    assert job_argv(["true"], None, None) == (["true"], ())


def test_output_files_are_private_and_never_opened_through_a_symlink(tmp_path: Path) -> None:
    with open_output(str(tmp_path / "stdout.log"), None) as fh:
        fh.write(b"x")
    assert (tmp_path / "stdout.log").stat().st_mode & 0o777 == 0o600
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "stderr.log").symlink_to(target)
    with pytest.raises(OSError):
        open_output(str(tmp_path / "stderr.log"), None)
    assert target.read_text() == "keep"
