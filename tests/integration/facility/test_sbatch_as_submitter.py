"""A root facility gateway runs sbatch AS the submitter, not `sbatch --uid` as root: slurmctld (and every check of
Slurm's that uses the requester: partition AllowGroups/RootOnly, QOS and association limits, job_submit and
cli_filter) sees the user's own request, authenticated by munge as them.

The real sbatch is wrapped: a script first on the gateway's PATH records who runs it (`id -u`, `id -g`, `id -G`),
its cwd, umask and argv, then execs the real sbatch with its stdin (the script). The job is then the user's in
slurmctld (`scontrol show job`, `squeue -o %u`). Single job and array (one `sbatch --array`). Held jobs only,
cancelled after; the shared lab is not reconfigured (no RootOnly partition can be added to show a refusal)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import Facility, serve

from unix_users import scratch_dir

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
USER = "alice"


@pytest.fixture(scope="module", autouse=True)
def wrapped(slurm_lab: Any) -> Iterator[Path]:
    """A recording `sbatch` first on PATH for the module's gateway (started after this); its records' folder."""
    real = shutil.which("sbatch")
    if real is None:
        pytest.skip("no sbatch on PATH")
    with scratch_dir("fd-sbatchwrap-") as bin_dir, scratch_dir("fd-sbatchrec-", 0o1777) as records:
        wrapper = bin_dir / "sbatch"
        wrapper.write_text(
            "#!/bin/sh\n"
            f"f={records}/call.$$\n"
            'printf "%s\\n" "$(id -u)" "$(id -g)" "$(id -G)" "$(pwd)" "$(umask)" > "$f.tmp"\n'
            'printf "%s\\0" "$@" >> "$f.tmp"\n'
            'mv "$f.tmp" "$f"\n'
            # what a submitter's LD_PRELOAD could make their own sbatch print: another user's job id
            'if [ -n "$FD_FORGE_ID" ]; then cat >/dev/null; echo "$FD_FORGE_ID"; exit 0; fi\n'
            'if [ -n "$FD_SLOW_SBATCH" ]; then sleep "$FD_SLOW_SBATCH"; fi\n'  # slurmctld slow to answer
            f'exec {real} "$@"\n'
        )
        wrapper.chmod(0o755)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
            yield records


def _calls(records: Path) -> list[tuple[list[str], list[str]]]:
    """Every recorded sbatch call, oldest first: (its uid, gid, groups, cwd, umask lines; its argv)."""
    out = []
    for f in sorted((f for f in records.glob("call.*") if f.suffix != ".tmp"), key=lambda f: f.stat().st_mtime_ns):
        lines = f.read_text().split("\n", 5)
        out.append((lines[:5], [a for a in lines[5].split("\0") if a]))
    return out


def _slurm_user(bid: str) -> tuple[str, str]:
    """(scontrol's UserId, squeue's %u) of Slurm job `bid`, asked as root."""
    show = subprocess.run(["scontrol", "-o", "show", "job", bid], capture_output=True, text=True, timeout=30)
    user_id = next(w.split("=", 1)[1] for w in show.stdout.split() if w.startswith("UserId="))
    queue = subprocess.run(["squeue", "-h", "-j", bid, "-o", "%u"], capture_output=True, text=True, timeout=30)
    return user_id, queue.stdout.strip().split("\n")[0]


def _submit(fac: Facility, spec: dict[str, Any], user: str = USER, **env: str) -> dict[str, Any]:
    env = {"PATH": "/usr/bin:/bin", "FRONTDESK_UMASK": "0027", **env}
    body = {"spec": spec, "context": {"cwd": "/tmp", "env": env}}
    [[status, rec]] = fac.probe(user, [{"method": "POST", "path": "/v1/jobs", "body": body}])
    assert status == 200, rec
    return dict(rec)


def _backend_id(fac: Facility, job_id: int) -> str:
    """The Slurm job id (an array's) of frontdesk job `job_id`, once submitted."""
    deadline = time.monotonic() + 60
    while True:
        rec = fac.root_client().request("GET", f"/v1/jobs/{job_id}")
        bid = str(rec.get("backend_id") or "").split("_")[0]
        if bid.isdigit():
            return bid
        assert time.monotonic() < deadline, rec
        time.sleep(0.2)


def _assert_ran_as_user(records: Path, bid: str, before: int) -> None:
    pw = pwd.getpwnam(USER)
    calls = _calls(records)[before:]
    assert len(calls) == 1, calls
    (uid, gid, groups, cwd, umask), argv = calls[0]
    assert (int(uid), int(gid)) == (pw.pw_uid, pw.pw_gid), calls
    assert grp.getgrnam("lab1").gr_gid in {int(g) for g in groups.split()}, groups  # supplementary groups too
    assert "0" not in groups.split(), groups  # none of root's
    assert cwd == "/tmp" and umask == "0027", calls
    assert not any(a.startswith(("--uid", "--gid", "--export-file")) for a in argv), argv
    assert _slurm_user(bid) == (f"{USER}({pw.pw_uid})", USER)


def test_sbatch_runs_as_the_submitter_and_the_job_is_theirs(facility: Facility, wrapped: Path) -> None:
    before = len(_calls(wrapped))
    rec = _submit(facility, {"command": ["true"], "slurm": {"options": ["--hold"]}})
    try:
        bid = _backend_id(facility, rec["id"])
        _assert_ran_as_user(wrapped, bid, before)
    finally:
        facility.probe(USER, [{"method": "POST", "path": f"/v1/jobs/{rec['id']}/cancel"}])


def test_an_arrays_sbatch_runs_as_the_submitter(facility: Facility, wrapped: Path) -> None:
    before = len(_calls(wrapped))
    rec = _submit(facility, {"command": ["true"], "array": "0-1", "slurm": {"options": ["--hold"]}})
    try:
        [[status, tasks]] = facility.probe(USER, [{"method": "GET", "path": f"/v1/jobs?array={rec['id']}&tasks=true"}])
        assert status == 200 and len(tasks) == 2, tasks
        bid = _backend_id(facility, tasks[0]["id"])
        _assert_ran_as_user(wrapped, bid, before)
    finally:
        facility.probe(USER, [{"method": "POST", "path": f"/v1/jobs/{rec['id']}/cancel"}])


def test_a_job_id_sbatch_prints_for_another_users_job_is_not_adopted(facility: Facility, wrapped: Path) -> None:
    """The submitter controls their own sbatch (its environment, ptrace): what it prints is checked with Slurm."""
    bobs = _submit(facility, {"command": ["true"], "slurm": {"options": ["--hold"]}}, user="bob")
    try:
        bobs_bid = _backend_id(facility, bobs["id"])
        forged = _submit(facility, {"command": ["true"]}, FD_FORGE_ID=bobs_bid)
        got = facility.ended(forged["id"])
        assert got["state"] != "COMPLETED" and str(got.get("backend_id") or "") != bobs_bid, got
        assert "does not run as uid" in facility.log(), facility.log()[-2000:]
        facility.probe(USER, [{"method": "POST", "path": f"/v1/jobs/{forged['id']}/cancel"}])
        assert _slurm_user(bobs_bid)[1] == "bob"
        show = subprocess.run(["scontrol", "-o", "show", "job", bobs_bid], capture_output=True, text=True, timeout=30)
        assert "JobState=PENDING" in show.stdout, show.stdout  # still held, never cancelled through alice
    finally:
        facility.probe("bob", [{"method": "POST", "path": f"/v1/jobs/{bobs['id']}/cancel"}])


def _restart(fac: Facility) -> None:
    """SIGKILL the facility gateway (its sbatch runs on) and start it again on the same home and site."""
    assert fac.proc is not None
    fac.proc.send_signal(signal.SIGKILL)
    fac.proc.wait()
    serve(fac)


def test_a_restart_while_the_users_sbatch_runs_takes_its_answer(facility: Facility, wrapped: Path) -> None:
    """The launch record names the user's sbatch; the restarted root gateway waits for it and takes the id it
    wrote into the record (an fd the gateway opened), checked as the user's job: no second submission."""
    before = len(_calls(wrapped))
    known = {j["id"] for j in facility.root_client().request("GET", "/v1/jobs?limit=1000")}
    spec = {"command": ["true"], "slurm": {"options": ["--hold"]}}

    def send() -> None:
        try:
            _submit(facility, spec, FD_SLOW_SBATCH="4")
        except AssertionError:
            pass  # the gateway died before sbatch answered

    threading.Thread(target=send, daemon=True).start()
    deadline = time.monotonic() + 60
    while len(_calls(wrapped)) == before:  # the user's sbatch runs (past the gate), then sleeps
        assert time.monotonic() < deadline, facility.log()[-2000:]
        time.sleep(0.1)
    _restart(facility)
    new = [j for j in facility.root_client().request("GET", "/v1/jobs?limit=1000") if j["id"] not in known]
    assert len(new) == 1, new
    try:
        bid = _backend_id(facility, new[0]["id"])
        _assert_ran_as_user(wrapped, bid, before)  # one sbatch call only, the user's, and Slurm's job is theirs
    finally:
        facility.probe(USER, [{"method": "POST", "path": f"/v1/jobs/{new[0]['id']}/cancel"}])
