"""The shepherd: one small detached process per running job on the embedded backend (like slurmstepd).

`python -m frontdesk.backends.shepherd DIR` reads DIR/launch.json, runs the job in its own session,
enforces walltime (TIMEOUT) and memory (OUT_OF_MEMORY: a memory cgroup where this process may create
one, else a resident-set watchdog over the job's process tree), samples usage, writes DIR/result.json
atomically and tells the gateway. It outlives a gateway crash, so no job or result is lost, and its
O_EXCL pid file makes a second launch of the same attempt a no-op. Stdlib only: it starts fast.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "memory_cgroup_root", "parse_gpu_sample", "write_json"]

SAMPLE_SECONDS = 0.1
KILL_GRACE_SECONDS = 2.0
_PAGE = os.sysconf("SC_PAGE_SIZE")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON atomically (a crash leaves the old file or the new one, never half of one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def memory_cgroup_root() -> tuple[str, Path] | None:
    """('v2', dir) or ('v1', dir) where this process can create memory cgroups, else None.

    FRONTDESK_NO_CGROUP=1 forces the resident-set watchdog (what unprivileged users get).
    """
    if os.environ.get("FRONTDESK_NO_CGROUP") == "1":
        return None
    v2 = Path("/sys/fs/cgroup")
    try:
        if "memory" in (v2 / "cgroup.controllers").read_text().split():
            base = v2 / "frontdesk"
            base.mkdir(exist_ok=True)
            (v2 / "cgroup.subtree_control").write_text("+memory")
            (base / "cgroup.subtree_control").write_text("+memory")
            return ("v2", base)
    except OSError:
        pass
    v1 = Path("/sys/fs/cgroup/memory")
    try:
        if (v1 / "memory.limit_in_bytes").exists():
            base = v1 / "frontdesk"
            base.mkdir(exist_ok=True)
            if os.access(base, os.W_OK):
                return ("v1", base)
    except OSError:
        pass
    return None


class _Cgroup:
    def __init__(self, kind: str, path: Path, limit: int) -> None:
        self.kind, self.path = kind, path
        path.mkdir(exist_ok=True)
        if kind == "v2":
            (path / "memory.max").write_text(str(limit))
            (path / "memory.swap.max").write_text("0") if (path / "memory.swap.max").exists() else None
        else:
            (path / "memory.limit_in_bytes").write_text(str(limit))
            swap = path / "memory.memsw.limit_in_bytes"
            if swap.exists():
                try:
                    swap.write_text(str(limit))
                except OSError:
                    pass

    def join(self) -> None:
        (self.path / "cgroup.procs").write_text("0")

    def oom_killed(self) -> bool:
        try:
            name = "memory.events" if self.kind == "v2" else "memory.oom_control"
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def peak(self) -> int | None:
        name = "memory.peak" if self.kind == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self) -> None:
        for _ in range(20):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)


def _proc_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, pgrp, rss bytes) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                raw = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        try:
            table[int(entry)] = (int(fields[1]), int(fields[2]), int(fields[21]) * _PAGE)
        except (IndexError, ValueError):
            continue
    return table


def _tree(root: int, pgid: int) -> dict[int, int]:
    """The job's processes (its process group plus descendants that left it) -> their RSS."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = {pid for pid, (_, pgrp, _) in table.items() if pgrp == pgid}
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in table:
            found.add(pid)
        stack.extend(c for c in children.get(pid, []) if c not in found)
    return {pid: table[pid][2] for pid in found if pid in table}


def _kill_tree(root: int, pgid: int, cgroup: _Cgroup | None, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass
    pids = set(_tree(root, pgid)) | set(cgroup.pids() if cgroup else [])
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def parse_gpu_sample(text: str) -> list[tuple[int, float, int]]:
    """(index, utilisation %, memory used bytes) per line of
    `nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits`."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        try:
            out.append((int(parts[0]), float(parts[1]), int(float(parts[2]) * 1024 * 1024)))
        except ValueError:
            continue  # "[N/A]" on some boards
    return out


class _GpuSampler:
    """Samples the job's GPUs with nvidia-smi every few seconds: mean utilisation, peak memory."""

    EVERY = 2.0

    def __init__(self, devices: str) -> None:
        import shutil

        self.ids = [d for d in devices.split(",") if d.strip().isdigit()]
        self.tool = shutil.which("nvidia-smi") if self.ids else None
        self.utils: list[float] = []
        self.peak_mem = 0
        self.next_at = 0.0

    def sample(self, now: float) -> None:
        if not self.tool or now < self.next_at:
            return
        self.next_at = now + self.EVERY
        from frontdesk import proc
        from frontdesk.errors import FrontdeskError

        try:
            text = proc.run(
                [
                    self.tool,
                    "--query-gpu=index,utilization.gpu,memory.used",
                    "--format=csv,noheader,nounits",
                    "-i",
                    ",".join(self.ids),
                ],
                timeout=5,
            ).stdout
        except FrontdeskError:
            self.tool = None  # a broken driver must not cost every sample a timeout
            return
        rows = parse_gpu_sample(text)
        if rows:
            self.utils.append(sum(r[1] for r in rows) / len(rows))
            self.peak_mem = max(self.peak_mem, sum(r[2] for r in rows))

    def result(self) -> dict[str, Any]:
        if not self.utils:
            return {}
        return {"gpu_util_percent": round(sum(self.utils) / len(self.utils), 1), "gpu_mem_peak_bytes": self.peak_mem}


def _notify(launch: dict[str, Any]) -> None:
    path = launch.get("notify_socket")
    if not path:
        return
    body = json.dumps({"backend": "local", "ids": [launch["backend_id"]]}).encode()
    req = (
        f"POST /v1/notify HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            sock.connect(path)
            sock.sendall(req)
            sock.recv(256)
    except OSError:
        pass  # the gateway is down: result.json stays, and it reconciles on restart


class _Stop(Exception):
    pass


def run(job_dir: Path) -> int:
    """Run the attempt described in job_dir/launch.json to its end; returns 0."""
    cancelled = {"flag": False}

    def on_term(signum: int, frame: Any) -> None:
        cancelled["flag"] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    launch = json.loads((job_dir / "launch.json").read_text())
    try:
        fd = os.open(job_dir / "shepherd.pid", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return 0  # another shepherd owns this attempt: never start a job twice
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)

    if cancelled["flag"] or (job_dir / "cancel").exists():
        write_json(job_dir / "result.json", {"state": "CANCELLED", "ended_at": time.time(), "reason": "cancelled"})
        _notify(launch)
        return 0
    limit = launch.get("memory_bytes")
    cgroup = None
    if limit:
        root = memory_cgroup_root()
        if root:
            try:
                cgroup = _Cgroup(root[0], root[1] / launch["backend_id"], int(limit))
            except OSError:
                cgroup = None
    writable = launch.get("landlock_writable")

    def preexec() -> None:
        if cgroup is not None:
            cgroup.join()
        if writable:
            from frontdesk.guard.landlock import restrict_writes

            restrict_writes(list(writable))

    started = time.time()
    result: dict[str, Any] = {"started_at": started}
    with open(launch["stdout"], "ab") as out, open(launch["stderr"], "ab") as err:
        if writable:
            from frontdesk.guard.landlock import describe

            err.write(f"frontdesk: {describe(list(writable))}\n".encode())
            err.flush()
        try:
            child = subprocess.Popen(
                launch["argv"],
                cwd=launch["cwd"],
                env=launch["env"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as exc:
            err.write(f"frontdesk: cannot start {launch['argv'][0]!r}: {exc.strerror}\n".encode())
            err.flush()
            result.update(
                state="FAILED", exit_code=127, signal=None, ended_at=time.time(), reason=f"cannot start: {exc.strerror}"
            )
            write_json(job_dir / "result.json", result)
            _notify(launch)
            return 0
    write_json(
        job_dir / "started.json",
        {"pid": child.pid, "started_at": started, "enforcement": cgroup.kind if cgroup else ("rss" if limit else None)},
    )
    pidfd = os.pidfd_open(child.pid)
    walltime = launch.get("walltime_seconds")
    gpus = _GpuSampler(launch["env"].get("CUDA_VISIBLE_DEVICES", ""))
    peak, why, deadline_kill = 0, None, None
    status: int | None = None
    rusage = None
    while status is None:
        select.select([pidfd], [], [], SAMPLE_SECONDS)
        pid, st, ru = os.wait4(child.pid, os.WNOHANG)
        if pid:
            status, rusage = st, ru
            break
        now = time.time()
        rss = sum(_tree(child.pid, child.pid).values())
        peak = max(peak, rss)
        gpus.sample(now)
        if why is None:
            if cancelled["flag"]:
                why = "CANCELLED"
            elif walltime and now - started > walltime:
                why = "TIMEOUT"
            elif limit and cgroup is None and rss > int(limit):
                why = "OUT_OF_MEMORY"
            if why:
                _kill_tree(child.pid, child.pid, cgroup, signal.SIGKILL if why == "OUT_OF_MEMORY" else signal.SIGTERM)
                deadline_kill = now + KILL_GRACE_SECONDS
        elif deadline_kill and now > deadline_kill:
            _kill_tree(child.pid, child.pid, cgroup, signal.SIGKILL)
            deadline_kill = None
    os.close(pidfd)
    # Leftovers of the tree (daemons the job started) die with it.
    _kill_tree(child.pid, child.pid, cgroup, signal.SIGKILL)
    ended = time.time()
    code = os.waitstatus_to_exitcode(status)
    exit_code, sig = (code, None) if code >= 0 else (128 - code, -code)
    cpu = (rusage.ru_utime + rusage.ru_stime) if rusage else None
    peak = max(peak, (rusage.ru_maxrss * 1024) if rusage else 0, (cgroup.peak() or 0) if cgroup else 0)
    if why is None and cgroup is not None and cgroup.oom_killed():
        why = "OUT_OF_MEMORY"
    state = why or ("COMPLETED" if code == 0 else "FAILED")
    reason = {
        "TIMEOUT": f"walltime {walltime}s reached",
        "OUT_OF_MEMORY": f"memory limit {limit} bytes exceeded",
        "CANCELLED": "cancelled",
    }.get(state)
    result.update(
        state=state,
        exit_code=exit_code,
        signal=sig,
        ended_at=ended,
        cpu_seconds=cpu,
        peak_rss_bytes=peak or None,
        reason=reason,
        enforcement=cgroup.kind if cgroup else ("rss" if limit else None),
        **gpus.result(),
    )
    if cgroup is not None:
        cgroup.remove()
    write_json(job_dir / "result.json", result)
    _notify(launch)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: one argument, the attempt's directory."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m frontdesk.backends.shepherd DIR\n")
        return 2
    return run(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
