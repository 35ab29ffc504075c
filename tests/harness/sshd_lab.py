"""A private OpenSSH server on 127.0.0.1 for tests: its own host key, one authorized key, its own config.

`PrivateSshd(env, users)` starts `sshd -D -e -f CONFIG` on a free high port as the current user (root in CI),
letting the current user and `users` log in with a key made for it (nothing under ~/.ssh is read or written;
its directory is readable by those users, as sshd reads the key file as them), and gives the remote shell
`env` through `SetEnv` (the gateway's FRONTDESK_HOME, the stand-in's URL...), as a login node's own
configuration would. `client_config` is an ssh_config for `ssh -F`: the port, the key, the pinned host
key. Debian's openssh-server is installed when sshd is missing (as tests/slurm installs slurm-wlm).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["PrivateSshd", "ensure_sshd"]


def ensure_sshd() -> str:
    """The sshd binary; installs Debian's openssh-server when it is missing (root only)."""
    found = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
    if found:
        return found
    if os.geteuid() != 0:
        raise RuntimeError("sshd is not installed and the tests are not root: apt-get install openssh-server")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600, capture_output=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "openssh-server", "openssh-client"],
        check=True, env=env, timeout=900, capture_output=True,
    )  # fmt: skip
    return "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=60)
    return path.with_suffix(".pub").read_text().strip()


class PrivateSshd:
    """One sshd for one test; `stop()` ends it."""

    def __init__(self, env: Mapping[str, str], users: Sequence[str] = ()) -> None:
        self.root = root = Path(tempfile.mkdtemp(prefix="fd-sshd-"))
        root.chmod(0o755)
        self.port = _free_port()
        self.user = os.environ.get("USER") or "root"
        host_pub = _keygen(root / "host_key")
        (root / "authorized_keys").write_text(_keygen(root / "client_key") + "\n")
        (root / "authorized_keys").chmod(0o644)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        setenv = " ".join(f'{k}="{v}"' for k, v in env.items())
        (root / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\nPidFile {root / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {root / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            f"PermitRootLogin prohibit-password\nAllowUsers {' '.join([self.user, *users])}\nLogLevel VERBOSE\n"
            + (f"SetEnv {setenv}\n" if setenv else "")
        )
        (root / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_pub}\n")
        self.client_config = root / "ssh_config"
        self.client_config.write_text(
            f"Host 127.0.0.1\n  Port {self.port}\n  User {self.user}\n  IdentityFile {root / 'client_key'}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {root / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
            "  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        self.log = open(root / "sshd.log", "wb")  # noqa: SIM115 (closed by stop)
        sshd = ensure_sshd()
        self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(root / "sshd_config")], stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("sshd did not start: " + (root / "sshd.log").read_text()[-2000:]) from None
                time.sleep(0.05)

    @property
    def ssh(self) -> str:
        """The FRONTDESK_SSH value that reaches this server."""
        return f"ssh -F {self.client_config}"

    def stop(self) -> None:
        """End the server (its sessions' children end with their connections)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
