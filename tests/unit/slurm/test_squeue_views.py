"""The squeue shim's file fast path: the `sh` script `frontdesk shim install` writes, run for real by /bin/sh,
against a views folder written by ViewFiles (backends/slurm/views.py). Its fallback is a stand-in socket
client that prints MISS, so each test sees which path answered."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontdesk.backends.slurm.views import IDLE_DROP, MAX_NAME, MAX_PER_USER, ViewFiles, boot_id, uptime, view_name
from frontdesk.shims.scripts import VIEW_ENV, VIEW_SQUEUE

NOBODY = 65534


def _shim(tmp: Path) -> tuple[Path, ViewFiles]:
    run = tmp / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    client = tmp / "socket-client"
    client.write_text("#!/bin/sh\nprintf MISS; printf ' %s' \"$@\"; echo; exit 3\n")
    client.chmod(0o755)
    shim = tmp / "squeue"
    shim.write_text(
        VIEW_SQUEUE.format(
            socket=shlex.quote(str(run / "gateway.sock")),
            socket_client=shlex.quote(str(client)),
            env_test="".join(f"${{{v}}}" for v in VIEW_ENV),
            max_name=MAX_NAME,
        )
    )
    shim.chmod(0o755)
    views = ViewFiles(run / "squeue-views")
    assert views.prepare()
    return shim, views


def _run(shim: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in VIEW_ENV and k != "FRONTDESK_SOCKET"}
    return subprocess.run([str(shim), *argv], env={**clean, **(env or {})}, capture_output=True, text=True)


def _serve(views: ViewFiles, argv: list[str], text: str, uid: int | None = None) -> None:
    reg = views.register(os.getuid() if uid is None else uid, argv, caller=None)
    assert reg is not None
    views.write(reg, text)
    views.set_fresh(uptime() + 30)


def test_a_fresh_file_is_served_as_it_is(tmp_path: Path) -> None:
    shim, views = _shim(tmp_path)
    text = "JOBID PARTITION NAME\n   12 hpc train run 1\n"
    _serve(views, ["--me", "-h", "-o", "%.18i %.9P %j"], text)
    out = _run(shim, "--me", "-h", "-o", "%.18i %.9P %j")
    assert (out.returncode, out.stdout, out.stderr) == (0, text, "")
    other = _run(shim, "--me", "-h", "-o", "%i")  # another command line: no file, the socket client
    assert (other.returncode, other.stdout) == (3, "MISS --me -h -o %i\n")


def test_a_stale_or_missing_fresh_mark_goes_to_the_socket(tmp_path: Path) -> None:
    shim, views = _shim(tmp_path)
    _serve(views, ["--me"], "x\n")
    views.set_fresh(uptime() - 0.05)
    assert _run(shim, "--me").stdout == "MISS --me\n"
    (views.directory / "fresh").unlink()
    out = _run(shim, "--me")
    assert (out.stdout, out.stderr) == ("MISS --me\n", "")  # no shell noise about the missing file
    views.set_fresh(uptime() + 30)
    assert _run(shim, "--me").stdout == "x\n"


def test_a_mark_from_another_boot_is_stale(tmp_path: Path) -> None:
    shim, views = _shim(tmp_path)
    _serve(views, ["--me"], "x\n")
    (views.directory / "fresh").write_text(f"{int(uptime() * 100) + 3000}\n00000000-0000-0000-0000-000000000000\n")
    assert _run(shim, "--me").stdout == "MISS --me\n"
    (views.directory / "fresh").write_text(f"{int(uptime() * 100) + 3000}\n{boot_id()}\n")
    assert _run(shim, "--me").stdout == "x\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_file_of_another_user_is_not_served(tmp_path: Path) -> None:
    shim, views = _shim(tmp_path)
    _serve(views, ["--me"], "x\n")
    path = views.directory / f"{os.getuid()}#--me"
    os.chown(path, NOBODY, -1)
    assert _run(shim, "--me").stdout == "MISS --me\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_files_are_written_for_their_user_only(tmp_path: Path) -> None:
    _, views = _shim(tmp_path)
    _serve(views, ["-u", "nobody"], "x\n", uid=NOBODY)
    st_file = (views.directory / f"{NOBODY}#-u#nobody").stat()
    assert (st_file.st_uid, st_file.st_mode & 0o777) == (NOBODY, 0o600)
    assert views.directory.stat().st_mode & 0o777 == 0o711
    assert (views.directory / "fresh").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("name", ["SQUEUE_FORMAT", "SQUEUE_SORT", "SLURM_TIME_FORMAT", "FRONTDESK_URL"])
def test_a_variable_that_changes_the_answer_goes_to_the_socket(tmp_path: Path, name: str) -> None:
    shim, views = _shim(tmp_path)
    _serve(views, ["--me"], "x\n")
    assert _run(shim, "--me", env={name: "%i"}).stdout == "MISS --me\n"


def test_a_command_line_with_other_characters_has_no_file(tmp_path: Path) -> None:
    shim, views = _shim(tmp_path)
    for argv in (["-o", "%i#%j"], ["-n", "a/b"], ["-n", ""], ["-n", "é"], ["-o", "x" * MAX_NAME]):
        assert view_name(os.getuid(), argv) is None
        assert views.register(os.getuid(), argv, caller=None) is None
        assert _run(shim, *argv).stdout.startswith("MISS")


ARG = st.text(alphabet=st.sampled_from(list("aZ09%., :=_+-|;@#/*?[]'\"$\\!é\t")), min_size=0, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(ARG, max_size=5))
def test_the_shell_and_python_name_the_same_file(tmp_path: Path, argv: list[str]) -> None:
    shim, views = _shim(tmp_path)
    for entry in os.listdir(views.directory):
        (views.directory / entry).unlink()
    name = view_name(os.getuid(), argv)
    if name is not None:
        _serve(views, argv, "HIT\n")
    out = _run(shim, *argv)
    assert out.stdout == ("HIT\n" if name is not None else "MISS" + "".join(" " + a for a in argv) + "\n"), (argv, name)


def test_unread_files_are_dropped_and_read_ones_kept(tmp_path: Path) -> None:
    shim, views = _shim(tmp_path)
    _serve(views, ["--me"], "a\n")
    _serve(views, ["-h"], "b\n")
    time.sleep(0.05)  # file times are coarse: a read must land after the write's tick to move atime past mtime
    assert _run(shim, "--me").stdout == "a\n"
    later = time.time() + IDLE_DROP + 1
    assert views.expire(later)
    assert sorted(views.registrations) == [f"{os.getuid()}#--me"]
    assert not (views.directory / f"{os.getuid()}#-h").exists()
    views.write(views.registrations[f"{os.getuid()}#--me"], "a2\n")  # the next snapshot's rendering
    assert not views.expire(later)  # not read since: the gateway stops asking the controller
    views.close()
    assert os.listdir(views.directory) == []


def test_a_folder_someone_else_holds_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "squeue-views").symlink_to(target)
    assert not ViewFiles(tmp_path / "squeue-views").prepare()
    assert ViewFiles(tmp_path / "squeue-views").register(0, ["--me"], None) is None


def test_one_user_cannot_make_the_gateway_render_without_bound(tmp_path: Path) -> None:
    _, views = _shim(tmp_path)
    for i in range(MAX_PER_USER):
        assert views.register(1000, ["-j", str(i)], caller=None) is not None
    assert views.register(1000, ["-j", "extra"], caller=None) is None  # answered through the socket instead
    assert views.register(1000, ["-j", "0"], caller=None) is not None  # a kept one stays
    assert views.register(1001, ["-j", "extra"], caller=None) is not None  # another user has their own budget
