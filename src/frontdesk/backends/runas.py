"""Who a job runs as: the submitter's uid, gid and groups; the drop from root happens in the shepherd.

A gateway running as root (facility mode) never runs a job as itself on another user's behalf: the
shepherd sets up the cgroup as root, then drops to the submitter's identity (groups, gid, uid, in that
order) before exec. A gateway running as an ordinary user can only run its own user's jobs.

Files: the attempt's directories stay the gateway's (0700), so a user can never swap a path the root
shepherd opens for a symlink; the files in them (logs, script, spec) are the user's, 0600 (0700 for a
script). Output files are opened with O_NOFOLLOW. Stdlib only: the shepherd imports this.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "RunAs",
    "become",
    "drop",
    "for_job",
    "job_argv",
    "keyctl_number",
    "keyring_joiner",
    "open_output",
    "own",
    "script_argv",
    "umask_of",
]


@dataclass(frozen=True)
class RunAs:
    """A Unix identity a job runs as."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    name: str
    home: str
    shell: str

    @classmethod
    def of_uid(cls, uid: int) -> RunAs:
        """The identity of a uid from the password and group databases (KeyError if there is no such user)."""
        import pwd

        pw = pwd.getpwuid(uid)
        groups = tuple(sorted(set(os.getgrouplist(pw.pw_name, pw.pw_gid))))
        return cls(uid, pw.pw_gid, groups, pw.pw_name, pw.pw_dir, pw.pw_shell)

    def to_json(self) -> dict[str, Any]:
        """For launch.json."""
        return {**asdict(self), "groups": list(self.groups)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunAs:
        """From launch.json."""
        return cls(
            int(data["uid"]),
            int(data["gid"]),
            tuple(int(g) for g in data["groups"]),
            str(data["name"]),
            str(data["home"]),
            str(data["shell"]),
        )

    @property
    def foreign(self) -> bool:
        """Whether this is someone else than the current process (a drop is needed)."""
        return self.uid != os.geteuid()


def for_job(uid: int | None, principal: str | None) -> RunAs:
    """The identity to run a job as; BackendError when this gateway may not or cannot run it so.

    `uid` is the submitter's (peer credentials); when a record has none, the principal's name is looked up
    (a root gateway never falls back to itself for a named non-root principal).
    """
    import pwd

    from frontdesk.errors import BackendError

    me = os.geteuid()
    if uid is None and principal is None:
        uid = me  # handed over with no submitter at all (a backend driven directly): our own job
    elif uid is None:
        try:
            uid = pwd.getpwnam(principal or "").pw_uid
        except KeyError:
            raise BackendError(f"no Unix user {principal!r} to run this job as") from None
    if uid != me and me != 0:
        raise BackendError(f"this gateway runs as uid {me} and cannot run a job as uid {uid}")
    try:
        return RunAs.of_uid(uid)
    except KeyError:
        raise BackendError(f"no Unix user with uid {uid} to run this job as") from None


def drop(who: RunAs) -> None:
    """Become `who` for good (in the child, before exec): supplementary groups, gid, then uid."""
    if not who.foreign:
        return
    os.setgroups(list(who.groups))
    os.setresgid(who.gid, who.gid, who.gid)
    os.setresuid(who.uid, who.uid, who.uid)
    if os.getresuid() != (who.uid,) * 3 or os.getresgid() != (who.gid,) * 3:
        raise PermissionError(f"could not become uid {who.uid}")


def own(path: Path, who: RunAs, mode: int) -> None:
    """Give a file to the job's user with this mode (the chown only where we may, i.e. as root)."""
    if who.foreign and os.geteuid() == 0:
        os.chown(path, who.uid, who.gid, follow_symlinks=False)
    os.chmod(path, mode)


def open_output(path: str, who: RunAs | None) -> BinaryIO:
    """Open a log file for appending: created 0600, the job user's, never through a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if who is not None and who.foreign and os.geteuid() == 0:
            os.fchown(fd, who.uid, who.gid)
        os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "ab")


def script_argv(argv: list[str], script: str, fd: int) -> list[str]:
    """The argv to run a script the job's user cannot reach by path, through an inherited fd instead.

    `[interpreter, script]` becomes `[interpreter, /dev/fd/N]`; a `#!` script run directly becomes
    `[interpreter, arg?, /dev/fd/N]`, as the kernel would have built it.
    """
    path = f"/dev/fd/{fd}"
    if argv and argv[0] == script:
        first = os.pread(fd, 256, 0).split(b"\n", 1)[0]
        if not first.startswith(b"#!"):
            raise OSError(f"{script}: no #! line")
        parts = first[2:].decode(errors="replace").strip().split(None, 1)
        if not parts:
            raise OSError(f"{script}: empty #! line")
        return [*parts, path, *argv[1:]]
    return [path if a == script else a for a in argv]


def umask_of(env: dict[str, str]) -> int | None:
    """The submitter's umask its client put in the job's environment (`FRONTDESK_UMASK`, octal); None when
    absent or malformed (the job then keeps the gateway's, as before clients sent one)."""
    raw = env.get("FRONTDESK_UMASK", "")
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 4 and set(raw) <= set("01234567")):
        return None
    return int(raw, 8)


_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "ppc64": 271, "s390x": 280}
"""The keyctl system call's number per machine (libc has no wrapper; libkeyutils may not be installed)."""


def keyctl_number() -> int:
    """The keyctl system call's number on this machine, -1 where not known."""
    return _SYS_KEYCTL.get(os.uname().machine, -1)


def keyring_joiner() -> Callable[[], None] | None:
    """Made before the fork (ctypes is not imported in a forked child): a call that joins a new, empty session
    keyring. The gateway's own session keyring (systemd gives a service one; a root shell has root's) survives
    fork, setuid and exec, and whoever possesses it reads every key in it: root's, and other users' jobs'.
    None where keyctl's number is not known here."""
    number = _SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        return None
    import ctypes
    import errno

    call = ctypes.CDLL(None, use_errno=True).syscall
    call.restype = ctypes.c_long

    def join() -> None:
        if call(number, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
            err = ctypes.get_errno()
            if err not in (errno.ENOSYS, errno.EPERM):  # no keyrings (a seccomp filter): none to possess either
                raise OSError(err, f"cannot leave the gateway's session keyring: {os.strerror(err)}")

    return join


def become(who: RunAs | None, cwd: str, join_keyring: Callable[[], None] | None = None) -> None:
    """In the child before exec (after the cgroup join): leave the gateway's session keyring for a new, empty one
    the job possesses (`keyring_joiner`), drop to the job's user and enter its workdir as that user; on failure
    say why on stderr and exit 126 (never run on as root, nor in the gateway's keyring)."""
    if who is None or not who.foreign:
        return
    try:
        if join_keyring is not None:  # as root: charged to root's key quota, not the user's (200 keys by default)
            join_keyring()
        drop(who)
        os.chdir(cwd)
    except OSError as exc:
        os.write(2, f"frontdesk: cannot start as {who.name} in {cwd}: {exc.strerror or exc}\n".encode())
        os._exit(126)


def job_argv(argv: list[str], script: str | None, who: RunAs | None) -> tuple[list[str], tuple[int, ...]]:
    """The argv to exec and the fds it inherits: a script in our 0700 directory reaches another user by fd."""
    if who is None or not who.foreign or not script or script not in argv:
        return argv, ()
    fd = os.open(script, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    return script_argv(argv, script, fd), (fd,)
