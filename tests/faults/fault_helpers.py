"""Helpers for the fault-injection suite: process liveness, pid files written by canary jobs, waits."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def alive(pid: int) -> bool:
    """A live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pids_in(directory: Path, pattern: str = "*.pid") -> list[int]:
    """Every pid a canary job wrote (one per file, or one per line)."""
    out = []
    for path in sorted(directory.glob(pattern)):
        out += [int(x) for x in path.read_text().split() if x.isdigit()]
    return out


def until(check: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `check` until true (no hidden fixed sleep), failing with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def small_tmpfs(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A 48 MiB tmpfs (root's, 0700) on a fresh /tmp directory, for a state directory a test fills or makes
    read-only; made writable again, unmounted and removed after (left mounted when `keep`). Skips unless root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", str(home)], check=True)
    try:
        yield home
    finally:
        if not keep:
            subprocess.run(["mount", "-o", "remount,rw", str(home)], check=False)
            subprocess.run(["umount", "-l", str(home)], check=False)
            os.rmdir(home)


def shepherd_pid(home: Path, backend_id: str) -> int:
    """The shepherd of one attempt on the embedded backend."""
    path = home / "local" / backend_id / "shepherd.pid"
    until(path.exists, what=f"shepherd of {backend_id}")
    until(lambda: path.read_text().partition(" ")[0].strip().isdigit(), what="shepherd pid")
    return int(path.read_text().split()[0])  # `pid start boot` (procid)


def cgroup_dir(home: Path, backend_id: str) -> Path:
    """Where this gateway's cgroup for an attempt lives (v1 memory hierarchy on these machines)."""
    state = (home / "local" / "state-id").read_text().strip()
    return Path("/sys/fs/cgroup/memory/frontdesk") / f"{state}-{backend_id}"


def cgroups_usable() -> bool:
    """Whether this process can make memory cgroups (root on cgroup v1 here)."""
    return os.geteuid() == 0 and os.access("/sys/fs/cgroup/memory", os.W_OK)


def escaping_tree(out: Path, leaves: int = 3) -> str:
    """A canary job: processes that leave with setsid and a double fork, each writing its pid, then waits.

    Bounded: `leaves` sleeps of each kind; nothing destructive."""
    q = str(out)
    return (
        f"cd '{q}'; "
        f"for i in $(seq {leaves}); do setsid sh -c 'echo $$ > setsid-'$i'.pid; exec sleep 300' & done; "
        f"for i in $(seq {leaves}); do ( ( sh -c 'echo $$ > double-'$i'.pid; exec sleep 300' & ) & ) ; done; "
        f"echo $$ > main.pid; "
        f"while [ $(ls *.pid | wc -l) -lt {2 * leaves + 1} ]; do sleep 0.05; done; touch ready; exec sleep 300"
    )


def exchange(sock_path: Path, *pieces: bytes) -> bytes:
    """Bytes to the gateway's Unix socket, piece by piece (stopping when it closes), then its whole answer."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(sock_path))
        for piece in pieces:
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break  # the gateway answered and closed before reading everything: read what it said
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    return data


def raw_request(sock_path: Path, method: str, path: str, body: bytes = b"", chunked: bool = False) -> tuple[int, bytes]:
    """One HTTP/1.1 request over the gateway's Unix socket, bytes as given; (status, body). For hostile bodies
    the client would refuse to build."""
    head = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close", "Content-Type: application/json"]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}")
    payload = body
    if chunked:
        step = 64 * 1024
        parts = [b"%x\r\n%s\r\n" % (len(body[i : i + step]), body[i : i + step]) for i in range(0, len(body), step)]
        payload = b"".join(parts) + b"0\r\n\r\n"
    data = exchange(sock_path, ("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    header, _, rest = data.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in header.lower():
        out, buf = b"", rest
        while buf:
            size_text, _, buf = buf.partition(b"\r\n")
            size = int(size_text, 16)
            if size == 0:
                break
            out, buf = out + buf[:size], buf[size + 2 :]
        rest = out
    return status, rest
