"""The squeue shim's two thin clients, as text `frontdesk shim install` writes.

`DIR/squeue` is a POSIX `sh` script: for a command line made of plain characters (no SQUEUE_* variables) it
`cat`s the answer the gateway keeps rendered for this user (backends/slurm/views.py) while the gateway's
`fresh` mark is ahead of /proc/uptime; anything else, or a missing or stale file, goes to
`DIR/.full/squeue-socket`, a Python client that writes the command line to the socket (and registers it for
a file), which hands anything it cannot do to the full shim, which may hand it to the real squeue.
Measured per call on the lab (bench/slurm_scale.py): the file ~1.6 ms of CPU, the socket client ~8.5 ms,
the real squeue ~3.3 ms.
"""

from __future__ import annotations

__all__ = ["SOCKET_SQUEUE", "VIEW_ENV", "VIEW_SQUEUE"]

VIEW_ENV = (
    "FRONTDESK_URL",
    "FRONTDESK_TOKEN",
    "FRONTDESK_SHIM_FULL",
    "SLURM_TIME_FORMAT",
    "SLURM_CLUSTERS",
    "SQUEUE_ACCOUNT",
    "SQUEUE_ALL",
    "SQUEUE_ARRAY",
    "SQUEUE_ARRAY_UNIQUE",
    "SQUEUE_FEDERATION",
    "SQUEUE_FORMAT",
    "SQUEUE_FORMAT2",
    "SQUEUE_LICENSES",
    "SQUEUE_LOCAL",
    "SQUEUE_NAMES",
    "SQUEUE_PARTITION",
    "SQUEUE_PRIORITY",
    "SQUEUE_QOS",
    "SQUEUE_SIBLING",
    "SQUEUE_SORT",
    "SQUEUE_STATES",
    "SQUEUE_USERS",
)
"""Variables that change squeue's answer (man squeue) or the route: any of them set, the file is not read."""

VIEW_SQUEUE = r"""#!/bin/sh
# frontdesk shim for `squeue`: serves the answer the gateway keeps rendered for this user and command line
# while it is fresh; otherwise the socket client ({socket_client}). Written by `frontdesk shim install`.
S=${{FRONTDESK_SOCKET:-{socket}}}
V=${{S%/*}}/squeue-views
if [ -z "{env_test}" ]; then
  while read -r f k _ && [ "$f" != Uid: ]; do k=; done </proc/self/status
  [ -n "$k" ] && for a; do
    case $a in ''|*[!A-Za-z0-9%.,:=_+'|;@ '-]*) k=; break;; esac
    k=$k'#'$a
  done
  if [ -n "$k" ] && [ ${{#k}} -le {max_name} ] && [ -O "$V/$k" ] && {{
    {{ read -r e; read -r b; }} <"$V/fresh" && read -r u _ </proc/uptime && read -r c </proc/sys/kernel/random/boot_id
  }} 2>/dev/null && [ "$b" = "$c" ] && [ "${{u%.*}}${{u#*.}}" -lt "$e" ] 2>/dev/null; then
    {{ exec cat <&3 3<&- 2>&4 4>&-; }} 4>&2 2>/dev/null 3<"$V/$k"
  fi
fi
exec {socket_client} "$@"
"""
"""The `sh` squeue shim (format with socket and socket_client shell-quoted, env_test, max_name)."""

SOCKET_SQUEUE = r"""#!{fast_python} -IS
# frontdesk shim for `squeue`, socket-only: the gateway formats the answer from its cached view; this
# process only writes the command line to the socket and copies the reply (-I -S: no site-packages, no
# imports beyond the built-in posix/sys and _socket; `os` alone would cost 0.9 ms of a 6 ms start).
# Anything it cannot do goes to the full shim ({full}), which may hand the command line to the real
# squeue. Written by `frontdesk shim install`.
import posix, sys, _socket
E = posix.environ
CRLF = b"\r\n"
def full():
    posix.execve({python!r}, [{python!r}, {full!r}] + sys.argv[1:], {{**E, b"FRONTDESK_SHIM_DIR": {shim_dir_b!r}}})
if E.get(b"FRONTDESK_URL") or E.get(b"FRONTDESK_TOKEN") or E.get(b"FRONTDESK_SHIM_FULL"):
    full()
U = posix.getuid()
parts = [b"uid=%d" % U] + [k + b"=" + v for k, v in E.items() if k.startswith(b"SQUEUE_")]
body = b"\0".join(parts + [b"--"] + [a.encode("utf-8", "surrogateescape") for a in sys.argv[1:]])
head = b"POST /v1/slurm/text/squeue HTTP/1.0" + CRLF + b"Host: frontdesk" + CRLF
try:
    P = E.get(b"FRONTDESK_SOCKET") or {socket_b!r}
    D, S, T = posix.stat(P.rpartition(b"/")[0] or b"/"), posix.lstat(P), (0, U)
    if D.st_uid not in T or S.st_uid not in T or D.st_mode & 0o022 and not (D.st_mode & 0o1000 and D.st_uid == 0):
        full()  # not ours or root's (a squatter's?): the full shim checks and refuses with a message
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.settimeout(15.0)
    s.connect(P)
    s.sendall(head + b"Content-Length: %d" % len(body) + CRLF + CRLF + body)
    chunks = []
    while True:
        c = s.recv(262144)
        if not c:
            break
        chunks.append(c)
    s.close()
except OSError:
    full()
head, _, out = b"".join(chunks).partition(CRLF + CRLF)
lines = head.split(CRLF)
if len(lines[0].split(b" ")) < 2 or lines[0].split(b" ")[1] != b"200":
    full()
rc, err = 0, b""
for line in lines[1:]:
    key, _, value = line.partition(b":")
    key = key.strip().lower()
    if key == b"x-exit":
        rc = int(value)
    elif key == b"x-stderr-hex":
        err = bytes.fromhex(value.strip().decode())
if out:
    posix.write(1, out)
if err:
    posix.write(2, err)
sys.exit(rc)
"""
