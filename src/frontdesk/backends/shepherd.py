"""The shepherd: one small detached process per running job on the embedded backend (like slurmstepd).

`python -m frontdesk.backends.shepherd DIR` reads DIR/launch.json, runs the job in its own session,
enforces walltime (TIMEOUT; time suspended does not count) and memory (OUT_OF_MEMORY: a memory cgroup where
this process may create one, else a resident-set watchdog over the job's process tree), samples usage
(watch.py), freezes the job
while the gateway asks (freezing.py: a trial runs on its cores), writes DIR/result.json atomically and tells
the gateway. It outlives a gateway crash, so no job or result is lost, and its
O_EXCL pid file makes a second launch of the same attempt a no-op. Stdlib only: it starts fast.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from frontdesk import faults, procid
from frontdesk.backends.freezing import Freezer, Pause
from frontdesk.backends.gpuwatch import parse_gpu_sample
from frontdesk.backends.tracking import (
    TAG_VAR,
    JobCgroup,
    attempt_pids,
    kill_all,
    memory_cgroup_root,
    nothing_left,
    set_child_subreaper,
    started_record,
)
from frontdesk.backends.watch import Watch, enforcement
from frontdesk.jobs.state import JobState
from frontdesk.wire import request_head

__all__ = ["main", "memory_cgroup_root", "parse_gpu_sample", "write_json"]

SUSPEND_BOUND_SECONDS = 86400.0
"""One suspension lasts at most this long whatever its request says (a request ends at its trial's limit)."""
NOTICE_WAIT_SECONDS = 1.0


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON atomically (a crash leaves the old file or the new one, never half of one)."""
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)  # job files are private
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(data))
    os.replace(tmp, path)


def _notify(launch: dict[str, Any]) -> None:
    """Tell the gateway the attempt ended: one datagram (backends/local/ends.py), else `POST /v1/notify`."""
    ends = launch.get("ends_socket")
    if ends and _send_end(str(ends), str(launch["backend_id"])):
        return
    path = launch.get("notify_socket")
    if not path:
        return
    body = json.dumps({"backend": "local", "ids": [launch["backend_id"]]}).encode()
    req = request_head("POST", "/v1/notify", len(body), json_body=True) + body
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            sock.connect(path)
            sock.sendall(req)
            sock.recv(256)
    except OSError:
        pass  # the gateway is down: result.json stays, and it reconciles on restart


def _send_end(path: str, backend_id: str) -> bool:
    """The end notice; False (the caller falls back to HTTP) when no gateway reads the socket, or when its queue
    stays full for NOTICE_WAIT_SECONDS (the kernel queues only net.unix.max_dgram_qlen, 10 here, datagrams)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.settimeout(NOTICE_WAIT_SECONDS)
            sock.connect(path)  # connected: waiting to send means waiting for room in the gateway's queue
            sock.send(backend_id.encode("ascii"))
        return True
    except OSError:
        return False


def _make_cgroup(name: str, limit: int | None) -> JobCgroup | None:
    root = memory_cgroup_root()
    if root is None:
        return None
    try:
        return JobCgroup.create(root[0], root[1] / name, limit)
    except OSError:
        return None


def _start_error(launch: dict[str, Any], exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):
        return f"cannot start {launch['argv'][0]!r}: {exc}"
    if exc.filename == launch["cwd"] and not os.path.isdir(launch["cwd"]):
        return f"cannot start: the working directory {launch['cwd']} does not exist"
    return f"cannot start {launch['argv'][0]!r}: {exc.strerror}"


def _store_result(job_dir: Path, result: dict[str, Any]) -> None:
    """Write result.json, waiting out a full disk: an ended job's result is never lost nor faked as NODE_FAIL."""
    delay = 0.5
    while True:
        try:
            write_json(job_dir / "result.json", result)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            try:
                sys.stderr.write(f"frontdesk shepherd: cannot write the result ({exc.strerror}); retrying\n")
            except OSError:
                pass  # stderr is on the same full disk
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _prepare_result(job_dir: Path) -> None:
    """Create result.json's temporary file while the job runs: making a file costs 0.1-0.2 ms of CPU on these
    ext4 hosts, and at the job's end it would sit between the exit and the waiter (write_json reuses it)."""
    try:
        os.close(os.open(job_dir / "result.tmp", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    except OSError:
        pass  # a full disk: write_json makes it at the end, or waits it out


class _Cancel:
    """Set by SIGTERM/SIGINT (the gateway's cancel): the watch loop ends the job."""

    def __init__(self) -> None:
        self.flag = False
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)

    def on_signal(self, signum: int, frame: Any) -> None:
        self.flag = True


def _claim(job_dir: Path) -> bool:
    """Take the attempt (O_EXCL pid file, `pid start boot`: procid); False when another shepherd owns it: never
    start a job twice."""
    me = procid.identify(os.getpid()) or procid.ProcId(os.getpid())
    try:
        fd = os.open(job_dir / "shepherd.pid", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    os.write(fd, me.text().encode())
    os.close(fd)
    return True


def _start(
    launch: dict[str, Any], tag: str, cgroup: JobCgroup | None, freezer: Freezer | None
) -> subprocess.Popen[bytes] | str:
    """Start the job in its own session (cgroup joined, its user, Landlock); or why it could not start."""
    writable = launch.get("landlock_writable")
    from frontdesk.backends.runas import RunAs, become, job_argv, keyring_joiner, open_output, umask_of

    who = RunAs.from_json(launch["run_as"]) if launch.get("run_as") else None
    argv, fds = job_argv(launch["argv"], launch.get("script"), who)
    mask = umask_of(launch["env"])
    join_keyring = keyring_joiner() if who is not None and who.foreign else None

    def preexec() -> None:
        if cgroup is not None:
            cgroup.join()
        if freezer is not None:
            freezer.join()
        become(who, launch["cwd"], join_keyring)  # cgroup set up as root, then the job's own user from here on
        if mask is not None:  # the submitter's, as sbatch's SLURM_UMASK: never the gateway's
            os.umask(mask)
        if writable:
            from frontdesk.backends.landlock import restrict_writes

            restrict_writes(list(writable))

    with open_output(launch["stdout"], who) as out, open_output(launch["stderr"], who) as err:
        if writable:
            from frontdesk.backends.landlock import describe

            err.write(f"frontdesk: {describe(list(writable))}\n".encode())
            err.flush()
        foreign = who is not None and who.foreign  # root never looks at the workdir: `become` enters it as the user
        try:
            if not foreign and not os.path.isdir(launch["cwd"]):
                raise FileNotFoundError(2, f"the working directory {launch['cwd']} does not exist", launch["cwd"])
            return subprocess.Popen(
                argv,
                cwd=None if foreign else launch["cwd"],
                env={**launch["env"], TAG_VAR: tag},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=fds,
                preexec_fn=preexec,
            )
        except (OSError, ValueError) as exc:
            msg = _start_error(launch, exc)
            err.write(f"frontdesk: {msg}\n".encode())
            err.flush()
            return msg


def _fence(pid: int, cgroup: JobCgroup | None, tag: str) -> bool:
    """Leftovers of the tree (daemons the job started, setsid/double-fork escapers) die with it, confirmed."""
    return nothing_left(pid, cgroup) or kill_all(  # the common case answered without a /proc scan
        lambda: attempt_pids(pgid=pid, cgroup=cgroup, ancestor=os.getpid(), tag=None if cgroup else tag)
    )


def _outcome(w: Watch, gone: bool) -> dict[str, Any]:
    """The result's fields from what the watch saw: state, exit, usage, reason, enforcement."""
    ended = time.time()
    code = os.waitstatus_to_exitcode(w.status)
    exit_code, sig = (code, None) if code >= 0 else (128 - code, -code)
    cgroup, ru = w.cgroup, w.rusage
    peak = max(w.peak, (ru.ru_maxrss * 1024) if ru else 0, (cgroup.peak() or 0) if cgroup else 0)
    why = w.why
    if why is None and cgroup is not None and cgroup.oom_killed():
        why = JobState.OUT_OF_MEMORY
    state = why or (JobState.COMPLETED if code == 0 else JobState.FAILED)
    reason = {
        JobState.TIMEOUT: f"walltime {w.walltime}s reached",
        JobState.OUT_OF_MEMORY: w.gpu_over or f"memory limit {w.limit} bytes exceeded",
        JobState.CANCELLED: "cancelled",
    }.get(state)
    return dict(
        state=state.value,
        exit_code=exit_code,
        signal=sig,
        ended_at=ended,
        cpu_seconds=(ru.ru_utime + ru.ru_stime) if ru else None,
        peak_rss_bytes=peak or None,
        reason=reason,
        enforcement=enforcement(cgroup, w.limit),
        tracking="cgroup" if cgroup else "subreaper",
        leftovers_killed=gone,
        **w.cap.result(),
        **w.gpus.result(),
        **(w.pause.result() if w.pause else {}),
    )


def _finish(job_dir: Path, result: dict[str, Any], cgroup: JobCgroup | None, freezer: Freezer | None) -> None:
    """The cgroups removed (a failed start leaves none behind either), result.json stored (waiting out a full disk)."""
    if cgroup is not None:
        cgroup.remove()
    if freezer is not None:
        freezer.remove()
    _store_result(job_dir, result)


def run(job_dir: Path) -> int:
    """Run the attempt described in job_dir/launch.json to its end (start, watch, fence, finish); returns 0."""
    cancel = _Cancel()
    launch = json.loads((job_dir / "launch.json").read_text())
    if not _claim(job_dir):
        return 0
    if cancel.flag or (job_dir / "cancel").exists():
        write_json(
            job_dir / "result.json", {"state": JobState.CANCELLED.value, "ended_at": time.time(), "reason": "cancelled"}
        )
        _notify(launch)
        return 0
    limit = launch.get("memory_bytes")
    tag = str(launch.get("cgroup") or launch["backend_id"])
    set_child_subreaper()  # escapers (setsid, double fork) re-parent here, also where no cgroup can be made
    cgroup = _make_cgroup(tag, int(limit) if limit else None)
    freezer = None
    if launch.get("suspendable"):  # any job a trial may suspend: its freezer cgroup (if any) joined at its start
        v2 = cgroup.path if cgroup is not None and cgroup.kind == "v2" else None
        freezer = Freezer.create(tag, v2, v1=launch.get("freezer_cgroup", True) is not False)
    started = time.time()
    child = _start(launch, tag, cgroup, freezer)
    if isinstance(child, str):
        failed = dict(state=JobState.FAILED.value, exit_code=127, signal=None, ended_at=time.time(), reason=child)
        _finish(job_dir, {"started_at": started, **failed}, cgroup, freezer)
        _notify(launch)
        return 0
    try:
        write_json(job_dir / "started.json", started_record(child.pid, started, enforcement(cgroup, limit)))
    except OSError:
        pass  # a full disk: the gateway still sees the shepherd alive (RUNNING); the result is what matters
    _prepare_result(job_dir)
    faults.point("shepherd_started")
    if freezer is not None:
        freezer.check(child.pid)
    pause = Pause(job_dir, freezer, lambda: _notify(launch), SUSPEND_BOUND_SECONDS) if freezer else None
    watch = Watch(launch, child.pid, cgroup, started, pause)
    watch.run(lambda: cancel.flag)
    faults.point("shepherd_job_exited")
    gone = _fence(child.pid, cgroup, tag)
    _finish(job_dir, {"started_at": started, **_outcome(watch, gone)}, cgroup, freezer)
    faults.point("shepherd_result_written")
    _notify(launch)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: one argument, the attempt's directory."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m frontdesk.backends.shepherd DIR\n")
        return 2
    faults.arm()
    return run(Path(args[0]))


if __name__ == "__main__":
    code = main()
    # Nothing is left to finalise (result written, gateway told, files closed by the kernel): no teardown, and
    # the exit itself (unmapping this interpreter) yields the CPU to the gateway, which is waking the job's
    # waiters at this very moment (nice 19: raising one's own nice value needs no privilege).
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    except OSError:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
