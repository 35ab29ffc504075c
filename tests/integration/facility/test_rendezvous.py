"""Rendezvous: a client sends nothing to a socket someone else controls; a server never starts in, nor chmods,
a directory it did not create; tokens never on the command line; a 200 cut off mid-body is exit 69."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import SYSTEM_PY, Facility, run_as, user_env

from frontdesk.errors import RendezvousRefused
from frontdesk.identity import check_inbox_socket
from leftovers import stop_process
from stub_gateway import one_answer
from unix_users import reachable

HERE = Path(__file__).resolve().parent


class Squat:
    """A socket held by `owner` (the attacker), logging whatever reaches it."""

    def __init__(self, owner: str, sock: Path) -> None:
        self.sock, self.log = sock, sock.parent / f".{sock.name}.got"
        argv = ["runuser", "-u", owner, "--", *user_env(owner), SYSTEM_PY, str(reachable(HERE / "squatter.py"))]
        self.proc = subprocess.Popen(
            [*argv, str(sock), str(self.log)], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def received(self) -> bytes:
        return self.log.read_bytes() if self.log.exists() else b""

    def stop(self) -> None:
        stop_process(self.proc, group=True)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _dir_of(owner: str, mode: int = 0o755) -> Path:
    d = Path(tempfile.mkdtemp(prefix="fdsq-", dir="/tmp"))
    shutil_chown(d, owner)
    d.chmod(mode)
    return d


def shutil_chown(path: Path, owner: str) -> None:
    import shutil

    shutil.chown(path, owner, owner)


@pytest.fixture
def squat(facility_users: dict[str, int]) -> Iterator[Any]:
    made: list[tuple[Squat, Path]] = []

    def make(sock: Path, owner: str = "carol") -> Squat:
        s = Squat(owner, sock)
        made.append((s, sock))
        return s

    yield make
    import shutil

    for s, sock in made:
        s.stop()
        sock.unlink(missing_ok=True)
        s.log.unlink(missing_ok=True)
        if sock.parent != Path("/tmp"):
            shutil.rmtree(sock.parent, ignore_errors=True)


def _run_as_alice(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_as("alice", [SYSTEM_PY, "-m", "frontdesk.cli.main", "run", "--wait", "--", "echo", "hi"], env=env)


def test_a_squatted_socket_directory_is_refused_and_nothing_is_sent(facility_users: dict[str, int], squat: Any) -> None:
    d = _dir_of("carol")
    s = squat(d / "gateway.sock")
    r = _run_as_alice({"FRONTDESK_SOCKET": str(s.sock)})
    carol = facility_users["carol"]
    assert (r.returncode, r.stdout) == (69, "")
    assert r.stderr == (
        f"frontdesk: refusing the socket directory {d}: it belongs to uid {carol}, not to you or the service "
        "(nothing was sent)\n"
    )
    assert s.received() == b""


def test_a_squatters_socket_in_tmp_is_refused(facility_users: dict[str, int], squat: Any) -> None:
    path = Path(tempfile.mktemp(prefix="fdsq-", suffix=".sock", dir="/tmp"))
    s = squat(path)
    r = _run_as_alice({"FRONTDESK_SOCKET": str(path)})
    assert r.returncode == 69 and s.received() == b""
    assert r.stderr == (
        f"frontdesk: refusing the socket {path}: it belongs to uid {facility_users['carol']}, not to you or the "
        "service (nothing was sent)\n"
    )


def test_the_default_tmp_path_squatted_before_the_victim_arrives(facility_users: dict[str, int], squat: Any) -> None:
    target = Path(f"/tmp/frontdesk-{facility_users['alice']}")  # alice's default without XDG_RUNTIME_DIR
    if target.is_dir() and not target.is_symlink() and target.stat().st_uid == facility_users["carol"]:
        run_as(
            "carol", ["rm", "-rf", "--", str(target)]
        ).check_returncode()  # this test's own squat, left by a killed run
    if target.exists() or target.is_symlink():
        pytest.skip(f"{target} already exists (alice's own gateway from another suite)")
    run_as("carol", ["mkdir", "-m", "0755", str(target)]).check_returncode()
    try:
        s = squat(target / "gateway.sock")
        r = _run_as_alice({})
        assert r.returncode == 69 and r.stdout == "" and s.received() == b""
        assert r.stderr.startswith(f"frontdesk: refusing the socket directory {target}: it belongs to uid ")
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    finally:
        run_as("carol", ["rm", "-rf", "--", str(target)])


def test_a_server_refuses_a_directory_someone_else_owns(facility_users: dict[str, int]) -> None:
    d = _dir_of("carol")
    home = Path(tempfile.mkdtemp(prefix="fdhome-", dir="/tmp"))
    shutil_chown(home, "alice")
    try:
        env = {"FRONTDESK_HOME": str(home), "FRONTDESK_SOCKET": str(d / "alice.sock")}
        r = run_as("alice", [SYSTEM_PY, "-m", "frontdesk.cli.main", "serve"], env=env)
        assert r.returncode == 2
        assert r.stderr == (
            f"frontdesk: socket directory {d} belongs to uid {facility_users['carol']}, not to us: "
            "refusing to start there\n"
        )
        assert not (d / "alice.sock").exists() and stat.S_IMODE(d.stat().st_mode) == 0o755
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


def test_a_directory_the_gateway_did_not_create_keeps_its_mode(gateway_factory: Any) -> None:
    shared = Path(tempfile.mkdtemp(prefix="fdshared-", dir="/tmp"))
    shared.chmod(0o711)
    try:
        gw = gateway_factory(start=False, env={"FRONTDESK_SOCKET": str(shared / "gw.sock")})
        gw.socket = shared / "gw.sock"
        gw.client.socket_path = str(gw.socket)
        gw.start()
        assert stat.S_IMODE(shared.stat().st_mode) == 0o711  # never chmodded
        assert stat.S_IMODE(gw.socket.stat().st_mode) == 0o600  # per-user: only the owner connects
        gw.stop()
        shared.chmod(0o777)  # writable by anyone, not sticky: someone could swap the socket
        r = gw.cli("serve")
        assert r.returncode == 2 and r.stderr == (
            f"frontdesk: socket directory {shared} is writable by others (mode 0777): refusing to start there\n"
        )
        assert stat.S_IMODE(shared.stat().st_mode) == 0o777
    finally:
        import shutil

        shutil.rmtree(shared, ignore_errors=True)


def test_the_facility_socket_is_world_connectable_in_a_0755_directory(facility: Facility) -> None:
    assert stat.S_IMODE(facility.socket.stat().st_mode) == 0o666
    assert stat.S_IMODE(facility.socket.parent.stat().st_mode) == 0o755
    assert facility.socket.stat().st_uid == 0


def test_serve_refuses_a_token_on_the_command_line(gateway_factory: Any) -> None:
    gw = gateway_factory(start=False)
    r = gw.cli("serve", "--listen", "127.0.0.1:1", "--token", "s3cr3t-value")
    assert r.returncode == 2 and "FRONTDESK_TOKEN" in r.stderr and "s3cr3t-value" not in r.stderr
    assert r.stderr.count("\n") == 1


def test_a_config_holding_tokens_must_be_0600(gateway_factory: Any) -> None:
    gw = gateway_factory(start=False, config='[gateway.tokens]\n"tok-x" = "alice"\n')
    cfg = gw.home / "frontdesk.toml"
    cfg.chmod(0o644)
    r = gw.cli("serve")
    assert r.returncode == 2
    assert (
        r.stderr
        == f"frontdesk: config file {cfg} is mode 0644: it holds tokens, so it must be 0600 (chmod 600 {cfg})\n"
    )


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"id": 1', "(8 of 100 bytes)"),
        (b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n{"id": 1', ""),
    ],
)
def test_a_200_cut_off_mid_body_is_exit_69_in_one_line(tmp_path: Path, answer: bytes, why: str) -> None:
    d = Path(tempfile.mkdtemp(prefix="fdcut-", dir="/tmp"))
    try:
        t = one_answer(d / "gw.sock", answer)
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
        env["FRONTDESK_SOCKET"] = str(d / "gw.sock")
        r = subprocess.run(
            [sys.executable, "-m", "frontdesk.cli.main", "status", "1"], env=env, capture_output=True, text=True
        )
        t.join(5)
        assert (r.returncode, r.stdout) == (69, "")
        assert (
            r.stderr
            == f"frontdesk: the gateway went away mid-answer: the answer was cut off mid-body {why}".rstrip() + "\n"
        )
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_an_inbox_socket_is_used_only_when_it_and_its_listener_are_the_sessions_user(
    facility_users: dict[str, int], squat: Any
) -> None:
    d = _dir_of("carol", 0o700)
    s = squat(d / "inbox.sock")
    with pytest.raises(RendezvousRefused, match="belongs to uid"):
        check_inbox_socket(s.sock, facility_users["alice"])  # carol's inbox is no place for alice's reports
    conn = check_inbox_socket(s.sock, facility_users["carol"])
    conn.close()
    alice_dir = _dir_of("alice", 0o700)
    try:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(alice_dir / "inbox.sock"))  # root listens, then dresses the file up as alice's
        srv.listen(1)
        shutil_chown(alice_dir / "inbox.sock", "alice")
        with pytest.raises(RendezvousRefused, match="the process listening there runs as uid 0"):
            check_inbox_socket(alice_dir / "inbox.sock", facility_users["alice"])
        srv.close()
    finally:
        import shutil

        shutil.rmtree(alice_dir, ignore_errors=True)


def test_serve_facility_flag_makes_a_world_connectable_socket(gateway_factory: Any) -> None:
    gw = gateway_factory(start=False)
    sock = Path(tempfile.mkdtemp(prefix="fdfacflag-", dir="/tmp")) / "run" / "fac.sock"
    gw.args = ["--facility", "--socket", str(sock)]
    gw.socket, gw.client.socket_path = sock, str(sock)
    try:
        gw.start()
        assert stat.S_IMODE(sock.stat().st_mode) == 0o666 and stat.S_IMODE(sock.parent.stat().st_mode) == 0o755
        assert "(backend local" in gw.log()
    finally:
        gw.stop()
        import shutil

        shutil.rmtree(sock.parent.parent, ignore_errors=True)


def test_a_token_file_must_be_private_to_its_user(facility: Facility) -> None:
    d = Path(pwd_home("carol")) / ".fdtok"
    run_as("carol", ["mkdir", "-p", "-m", "0700", str(d)]).check_returncode()
    tok = d / "token"
    run_as("carol", ["sh", "-c", f"umask 077; printf %s '{facility.tokens['carol']}' > {tok}"]).check_returncode()
    env = {"FRONTDESK_URL": facility.url, "FRONTDESK_TOKEN_FILE": str(tok)}
    try:
        r = facility.cli("carol", "status", "--json", env=env)
        assert r.returncode == 0, r.stderr
        run_as("carol", ["chmod", "0644", str(tok)]).check_returncode()
        r = facility.cli("carol", "status", env=env)
        assert (r.returncode, r.stderr) == (
            69,
            f"frontdesk: FRONTDESK_TOKEN_FILE {tok} is readable by others: chmod 600 it\n",
        )
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def pwd_home(user: str) -> str:
    import pwd

    return pwd.getpwnam(user).pw_dir


def test_the_squeue_shim_sends_nothing_to_a_squatted_socket(facility_users: dict[str, int], squat: Any) -> None:
    d = _dir_of("carol")
    s = squat(d / "gateway.sock")
    env = {"FRONTDESK_SOCKET": str(s.sock), "FRONTDESK_SHIM_STRICT": "1", "FRONTDESK_TOKEN": "alice-secret-token"}
    code = "import sys; from frontdesk.shims.squeue import main; sys.exit(main([]))"
    r = run_as("alice", [SYSTEM_PY, "-c", code], env=env)
    assert (r.returncode, r.stdout, s.received()) == (69, "", b"")
    assert r.stderr == (
        f"squeue: frontdesk gateway unavailable: refusing the socket directory {d}: it belongs to uid "
        f"{facility_users['carol']}, not to you or the service (nothing was sent)\n"
    )


def test_the_gateway_writes_no_report_into_an_inbox_its_session_user_does_not_own(
    facility_users: dict[str, int], squat: Any, tmp_path: Path
) -> None:
    import asyncio

    from frontdesk.agents.channels.inbox import InboxChannel
    from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState

    d = _dir_of("carol")
    s = squat(d / "inbox.sock")  # carol names her own socket as alice's session's inbox
    ch = InboxChannel(AgentSettings(), home=tmp_path)
    ctx = {"inbox_socket": str(s.sock), "inbox_token": "t" * 32, "agent_pid": os.getpid()}
    assert ch.capture("s-alice", "alice", ctx, {})
    session = Session(
        id="s-alice", user="alice", harness=Harness.CLAUDE_CODE, reach={"pid": os.getpid()}, turn_state=TurnState.IDLE
    )
    assert asyncio.run(ch.deliver(session, "[frontdesk] job 7 ended: alice's private report", [7])) is False
    assert s.received() == b""
