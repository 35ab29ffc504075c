"""Who is calling: the kernel's word, a MUNGE credential, or a bearer token mapped to one Unix user.

- Unix socket: `SO_PEERCRED` (pid, uid, gid), supplementary groups from `os.getgrouplist` (cached a minute).
- Across nodes: a MUNGE credential, decoded by `unmunge` (munged checks the key, the TTL and replays).
- Automation: bearer tokens, each mapped to one user, kept only as SHA-256 digests, compared in constant
  time, never logged; read from a 0600 file or the environment, never from the command line.
- Roles from the site's `[access]` table: labs are Unix groups (or a mapping), admins are a group.

Also the inbox rendezvous: the gateway writes to a session's inbox socket only when the socket, its directory
and its listener belong to the session's user (the client-side checks live in paths.py, which clients import).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from frontdesk.errors import ConfigError, RendezvousRefused
from frontdesk.paths import check_listener, check_rendezvous, peer_ids
from frontdesk.unixgroups import lab_candidates

__all__ = ["Caller", "PeerCred", "Roles", "TokenTable", "Via", "check_inbox_socket", "check_listener"]
__all__ += ["check_private_file", "check_rendezvous", "groups_of", "hash_token", "munge_credential"]
__all__ += ["peer_credentials", "unmunge_credential", "user_name"]


class Via(StrEnum):
    """How the caller's identity was established."""

    UNIX = "unix"
    """SO_PEERCRED of a Unix-socket peer."""
    TOKEN = "token"
    """A bearer token mapped to one user."""
    MUNGE = "munge"
    """A MUNGE credential decoded by munged."""


@dataclass(frozen=True)
class PeerCred:
    """What the kernel says about the other end of a Unix socket."""

    pid: int
    uid: int
    gid: int


@dataclass(frozen=True)
class Caller:
    """A principal: one Unix user (an agent session is a sub-principal of it), with its roles."""

    user: str
    uid: int | None
    gid: int | None
    via: Via
    groups: tuple[str, ...] = ()
    labs: tuple[str, ...] = ()
    admin: bool = False

    def owns(self, principal: str | None) -> bool:
        """Whether an object owned by `principal` is the caller's."""
        return principal is not None and principal == self.user


_NAME_CACHE: dict[int, tuple[float, tuple[int, int, int] | None, str]] = {}
_NAME_TTL = 60.0
_PASSWD = "/etc/passwd"


def _passwd_stamp() -> tuple[int, int, int] | None:
    try:
        st = os.stat(_PASSWD)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def user_name(uid: int, now: float | None = None) -> str:
    """The login name of a uid (the number as text when it has none).

    Asked on every request, so cached: an answer is dropped when /etc/passwd changes (useradd, usermod and
    userdel replace it: a local rename or removal is seen on the next request) and after a minute at most
    (users from NSS sources such as LDAP or sssd, like `groups_of`). `now`: a clock reading, for tests."""
    import pwd

    now = time.monotonic() if now is None else now
    stamp = _passwd_stamp()
    hit = _NAME_CACHE.get(uid)
    if hit is not None and hit[0] > now and hit[1] == stamp:
        return hit[2]
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    if len(_NAME_CACHE) > 4096:
        _NAME_CACHE.clear()
    _NAME_CACHE[uid] = (now + _NAME_TTL, stamp, name)
    return name


def peer_credentials(sock: Any) -> PeerCred | None:
    """SO_PEERCRED of a connected Unix socket (None for other families)."""
    found = peer_ids(sock)
    return None if found is None else PeerCred(*found)


_GROUP_CACHE: dict[tuple[str, int], tuple[float, tuple[str, ...]]] = {}
_GROUP_TTL = 60.0
_GID_CACHE: dict[str, tuple[float, int]] = {}  # a user's primary group by name, cached as long as the groups


def groups_of(user: str, gid: int | None = None, now: float | None = None) -> tuple[str, ...]:
    """A user's Unix groups, primary first (os.getgrouplist), cached a minute: group databases may be remote.

    The one group resolver: callers' roles, labs and memory scopes all ask here (`now`: a clock reading, for tests)."""
    import grp
    import pwd

    now = time.monotonic() if now is None else now
    if gid is None:  # the passwd look-up, cached too: it cost more than the cached groups (a job's end asks thrice)
        known = _GID_CACHE.get(user)
        if known is None or known[0] <= now:
            try:
                known = _GID_CACHE[user] = (now + _GROUP_TTL, pwd.getpwnam(user).pw_gid)
            except KeyError:
                return ()
        gid = known[1]
    hit = _GROUP_CACHE.get((user, gid))
    if hit is not None and hit[0] > now:
        return hit[1]
    try:
        gids = os.getgrouplist(user, gid)
    except OSError:
        gids = [gid]
    names: list[str] = []
    for g in [gid, *gids]:
        try:
            name = grp.getgrgid(g).gr_name
        except KeyError:
            name = str(g)
        if name not in names:
            names.append(name)
    out = tuple(names)
    if len(_GROUP_CACHE) > 4096:
        _GROUP_CACHE.clear()
        _GID_CACHE.clear()
    _GROUP_CACHE[(user, gid)] = (now + _GROUP_TTL, out)
    return out


def _names(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset([value])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise ConfigError(f"{where}: expected a list of names, got {value!r}")


@dataclass(frozen=True)
class Roles:
    """The site's roles: who is an admin, which groups are labs, what others may see."""

    admin_users: frozenset[str] = frozenset({"root"})
    admin_group: str | None = None
    lab_groups: frozenset[str] | None = None
    labs: Mapping[str, frozenset[str]] = field(default_factory=dict)
    private_jobs: bool = True
    labmates_read_jobs: bool = False
    notifiers: frozenset[str] = frozenset()
    """Users besides root and the gateway's own whose `POST /v1/notify` is taken (e.g. Slurm's SlurmUser)."""
    KEYS = frozenset("admins admins_group lab_groups labs private_jobs labmates_read_jobs notifiers".split())

    @classmethod
    def from_section(cls, section: Mapping[str, Any], owner: str | None = None) -> Roles:
        """Parse `[access]`; `owner` (the per-user gateway's own user) is an admin too."""
        admins = set(_names(section.get("admins", []), "[access].admins")) | {"root"}
        if owner:
            admins.add(owner)
        group = section.get("admins_group")
        if group is not None and not isinstance(group, str):
            raise ConfigError(f"[access].admins_group: expected a group name, got {group!r}")
        lab_groups = section.get("lab_groups")
        labs = {str(k): _names(v, f"[access.labs].{k}") for k, v in dict(section.get("labs", {})).items()}
        for key in ("private_jobs", "labmates_read_jobs"):
            if not isinstance(section.get(key, True), bool):
                raise ConfigError(f"[access].{key}: expected true or false, got {section[key]!r}")
        return cls(
            admin_users=frozenset(admins),
            admin_group=group,
            lab_groups=None if lab_groups is None else _names(lab_groups, "[access].lab_groups"),
            labs=labs,
            private_jobs=bool(section.get("private_jobs", True)),
            labmates_read_jobs=bool(section.get("labmates_read_jobs", False)),
            notifiers=_names(section.get("notifiers", []), "[access].notifiers"),
        )

    def labs_of(self, user: str, groups: Iterable[str] | None = None) -> tuple[str, ...]:
        """The labs of a user: configured mappings, then its Unix groups that count as labs."""
        gs = list(groups_of(user) if groups is None else groups)
        out = sorted(name for name, users in self.labs.items() if user in users)
        pool = [g for g in gs if g in self.lab_groups] if self.lab_groups is not None else lab_candidates(gs[1:])
        out += sorted({g for g in pool if g not in out and g != self.admin_group})
        return tuple(out)

    def is_admin(self, user: str, groups: Iterable[str] | None = None) -> bool:
        """Root, the listed admins and the members of the admin group."""
        if user in self.admin_users:
            return True
        if self.admin_group is None:
            return False
        return self.admin_group in (groups_of(user) if groups is None else tuple(groups))

    def labmates(self, a: str, b: str) -> bool:
        """Whether two users share a lab."""
        return bool(set(self.labs_of(a)) & set(self.labs_of(b)))

    def caller(self, user: str, uid: int | None, gid: int | None, via: Via) -> Caller:
        """The Caller for a user whose identity is already established."""
        groups = groups_of(user, gid)
        return Caller(
            user=user,
            uid=uid,
            gid=gid,
            via=via,
            groups=groups,
            labs=self.labs_of(user, groups),
            admin=self.is_admin(user, groups),
        )

    def caller_for_uid(self, uid: int, gid: int | None, via: Via) -> Caller:
        """The Caller for a kernel- or MUNGE-given uid."""
        return self.caller(user_name(uid), uid, gid, via)

    def caller_for_name(self, user: str, via: Via) -> Caller:
        """The Caller for a token's user (uid None when the name is not a Unix user)."""
        import pwd

        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            return Caller(user=user, uid=None, gid=None, via=via, admin=user in self.admin_users)
        return self.caller(user, pw.pw_uid, pw.pw_gid, via)


# -- bearer tokens ------------------------------------------------------------------------------------------


def hash_token(token: str) -> str:
    """The stored form of a token: `sha256:<hex>`."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def _digest(key: str) -> str:
    return key if key.startswith("sha256:") and len(key) == 71 else hash_token(key)


def check_private_file(path: Path, what: str) -> None:
    """Refuse a secrets file that others may read or write (it must be 0600 or stricter)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {exc.strerror}") from None
    if st.st_mode & 0o077:
        raise ConfigError(
            f"{what} {path} is mode {stat.S_IMODE(st.st_mode):04o}: it holds tokens, so it must be 0600 "
            f"(chmod 600 {path})"
        )
    if st.st_uid not in (0, os.geteuid()):
        raise ConfigError(f"{what} {path} belongs to uid {st.st_uid}, not to this service: refusing it")


class TokenTable:
    """Digest → user. Tokens are hashed on load and compared in constant time; the file is re-read when it changes."""

    def __init__(self, entries: Mapping[str, str], file: Path | None = None, required: bool = True) -> None:
        self._fixed = {_digest(k): v for k, v in entries.items()}
        self._file = file
        self._required = required
        """False for the state dir's default file: it exists once `frontdesk token create` made it."""
        self._file_stamp: tuple[float, int] | None = None
        self._from_file: dict[str, str] = {}
        self._reload()

    def _reload(self) -> None:
        if self._file is None:
            return
        if not self._required and not os.path.lexists(self._file):
            self._from_file, self._file_stamp = {}, None
            return
        check_private_file(self._file, "tokens file")
        st = self._file.stat()
        stamp = (st.st_mtime, st.st_size)
        if stamp == self._file_stamp:
            return
        table: dict[str, str] = {}
        for n, line in enumerate(self._file.read_text().splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            if len(parts) != 2:
                raise ConfigError(f"tokens file {self._file}:{n}: expected `USER sha256:HEX`")
            user, key = (parts[0], parts[1]) if parts[1].startswith("sha256:") else (parts[1], parts[0])
            table[_digest(key)] = user
        self._from_file, self._file_stamp = table, stamp

    def __len__(self) -> int:
        return len(self._fixed) + len(self._from_file)

    def user_for(self, token: str) -> str | None:
        """The user a presented token maps to (None when it matches none); revoked entries stop at once."""
        if not token:
            return None
        try:
            self._reload()
        except ConfigError:
            self._from_file = {}  # a file made unsafe (or removed) revokes everything it held
        given = hash_token(token).encode()
        found = None
        for digest, user in (*self._fixed.items(), *self._from_file.items()):
            if hmac.compare_digest(digest.encode(), given):
                found = user  # no early exit: every entry is compared
        return found


# -- MUNGE --------------------------------------------------------------------------------------------------


def munge_credential(binding: str, timeout: float = 10.0) -> str:
    """A fresh MUNGE credential for the calling user, carrying the one request it is for (`wire.request_binding`):
    whoever sees it on its way (plain HTTP) cannot replay it as another request of that user."""
    from frontdesk.proc import run

    return run(["munge"], input=binding, timeout=timeout).stdout.strip()


def unmunge_credential(cred: str, binding: str, timeout: float = 10.0) -> PeerCred:
    """Decode a credential with `unmunge`: its uid and gid, once its payload is `binding` (the request it came
    with, `wire.request_binding`); raises CommandFailed (replayed, expired, bad) or ConfigError (another request)."""
    from frontdesk.proc import run

    if not cred or len(cred) > 8192 or not cred.isascii() or any(c.isspace() for c in cred):
        raise ConfigError("not a MUNGE credential")
    out = run(["unmunge", "--numeric", "--keys=UID,GID"], input=cred, timeout=timeout)
    meta, _, payload = out.stdout.partition("\n\n")  # metadata lines, a blank line, then the payload as given
    keys: dict[str, int] = {}
    for line in meta.splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            keys[key.strip()] = int(value.strip())
    if "UID" not in keys or "GID" not in keys:
        raise ConfigError("unmunge gave no UID/GID")
    if not hmac.compare_digest(payload.encode(errors="surrogateescape"), binding.encode(errors="surrogateescape")):
        raise ConfigError("the MUNGE credential was made for another request")
    return PeerCred(0, keys["UID"], keys["GID"])


# -- rendezvous ---------------------------------------------------------------------------------------------


def check_inbox_socket(path: str | Path, uid: int) -> socket.socket:
    """Connect to a session's inbox socket only if it, its directory and its listener belong to `uid`.

    Returns the connected socket (the caller writes and closes it); raises RendezvousRefused otherwise.
    Root-owned directories that nobody else can write are accepted too (e.g. /run/user is root's).
    """
    check_rendezvous(path, (uid, 0))
    st = os.lstat(path)
    if st.st_uid != uid:
        raise RendezvousRefused(f"refusing inbox {path}: it belongs to uid {st.st_uid}, not the session's user {uid}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5.0)
    try:
        sock.connect(str(path))
        check_listener(sock, path, (uid,))
    except BaseException:
        sock.close()
        raise
    return sock
