"""The sbatch shim on the lab: the guard sees the real script, and the job behaves like one sbatch submitted.

Safety: every refused command is a canary (`mkfs.ext4 -n /dev/loop987654`: a dry run on a device that does
not exist), refused by the same rule as a real disk wipe and harmless if it ever ran. The "real sbatch" a
shim must never reach is a sentinel that only writes a marker file.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.slurm.parse import parse_scontrol_jobs

pytestmark = pytest.mark.slurm

CANARY = "mkfs.ext4 -n /dev/loop987654"
Run = Callable[..., subprocess.CompletedProcess[str]]


def _bin_dir(tmp: Path, bodies: dict[str, str]) -> Path:
    """Slurm commands for the gateway: the real ones, with some replaced by the scripts in `bodies`."""
    d = tmp / "slurm-bin"
    d.mkdir(exist_ok=True)
    for name in ("scontrol", "squeue", "sacct", "scancel", "sbatch"):
        (d / name).unlink(missing_ok=True)
        if name in bodies:
            (d / name).write_text(bodies[name])
            (d / name).chmod(0o755)
        else:
            (d / name).symlink_to(f"/usr/bin/{name}")
    return d


@pytest.fixture
def shim_env(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> Callable[..., tuple[Any, Run]]:
    """`make(sbatch_body=None, gateway_env={})` -> (gateway with guard + slurm plug-ins, run(argv, env=, cwd=))."""

    def make(
        sbatch_body: str | None = None, gateway_env: dict[str, str] | None = None, scontrol_body: str | None = None
    ) -> tuple[Any, Run]:
        bodies = {"sbatch": sbatch_body, "scontrol": scontrol_body}
        bins = _bin_dir(tmp_path, {k: v for k, v in bodies.items() if v is not None})
        config = (
            '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["guard", "slurm"]\n\n'
            f'[slurm]\nrefresh_seconds = 1.0\nbin_dir = "{bins}"\ncommand_timeout = 20\n'
        )
        env = {"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf"), **(gateway_env or {})}
        gw = gateway_factory(config=config, env=env)
        shims = tmp_path / "shims"
        assert gw.cli("shim", "install", str(shims)).returncode == 0
        sentinel = tmp_path / "real-sbatch-ran"
        fake_real = tmp_path / "fake-real-sbatch"
        fake_real.write_text(f"#!/bin/sh\necho \"$@\" >> '{sentinel}'\nexit 0\n")
        fake_real.chmod(0o755)
        base = {
            **{k: v for k, v in gw.env.items() if k != "GATEWAY_ONLY_CANARY"},
            "PATH": f"{shims}:{os.environ['PATH']}",
            "FRONTDESK_REAL_SBATCH": str(fake_real),
        }

        def run(*argv: str, env: dict[str, str] | None = None, cwd: Path = tmp_path) -> Any:
            return subprocess.run(
                list(argv), env={**base, **(env or {})}, capture_output=True, text=True, timeout=120, cwd=cwd
            )

        return gw, run

    return make


def _controller(job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True).stdout
    records = parse_scontrol_jobs(out)
    return records[0] if records else {}


def _wait_slurm(job_id: str, states: set[str], timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        rec = _controller(job_id)
        if rec.get("JobState") in states:
            return rec
        assert time.monotonic() < deadline, f"Slurm job {job_id} stuck in {rec.get('JobState')}"
        time.sleep(0.2)


def _submitted(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out
    job_id = out.stdout.strip().split()[-1]
    assert job_id.isdigit(), out
    return job_id


# -- 1. every submission passes the guard with what really runs --------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--wrap", CANARY],
        ["--mail-type=END", "--wrap", CANARY],  # an option the old shim did not read
        ["-N", "1", "--exclusive", "--wrap", f"echo ok; {CANARY}"],
    ],
)
def test_wrap_canary_is_refused(shim_env: Any, tmp_path: Path, argv: list[str]) -> None:
    gw, run = shim_env()
    out = run("sbatch", *argv)
    assert out.returncode != 0 and "Submitted" not in out.stdout, out
    assert "guard [disk.wipe]" in out.stderr, out.stderr
    assert not (tmp_path / "real-sbatch-ran").exists()
    assert gw.client.jobs(limit=5) == []


def test_script_content_canary_is_refused(shim_env: Any, tmp_path: Path) -> None:
    gw, run = shim_env()
    script = tmp_path / "prep.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --mail-type=NONE\necho preparing\n{CANARY}\n")
    out = run("sbatch", "--account=root", str(script))
    assert out.returncode != 0 and "Submitted" not in out.stdout, out
    assert "guard [disk.wipe]" in out.stderr
    assert not (tmp_path / "real-sbatch-ran").exists()


def test_unknown_option_fails_like_sbatch_without_reaching_it(shim_env: Any, tmp_path: Path) -> None:
    _, run = shim_env()
    out = run("sbatch", "--no-such-option", "--wrap", CANARY)
    assert out.returncode == 255 and "unrecognized option '--no-such-option'" in out.stderr
    refused = run("sbatch", "--uid=0", "--wrap", "true")
    assert refused.returncode == 1 and "--uid is not accepted" in refused.stderr
    assert not (tmp_path / "real-sbatch-ran").exists()


# -- 2. sbatch fidelity ------------------------------------------------------------------------------


def test_environment_is_the_submitters_and_export_is_honoured(shim_env: Any, tmp_path: Path) -> None:
    gw, run = shim_env(gateway_env={"GATEWAY_ONLY_CANARY": "leaked"})
    script = tmp_path / "env.sh"
    script.write_text(
        '#!/bin/bash\necho "exp=${MY_EXPERIMENT-unset} gw=${GATEWAY_ONLY_CANARY-unset} extra=${EXTRA-unset}"\n'
    )
    mine = {"MY_EXPERIMENT": "exp42"}
    all_id = _submitted(run("sbatch", "-o", "all.out", str(script), env=mine))
    none_id = _submitted(run("sbatch", "--export=NONE", "-o", "none.out", str(script), env=mine))
    vars_id = _submitted(run("sbatch", "--export=ALL,EXTRA=x y", "-o", "vars.out", str(script), env=mine))
    for job_id in (all_id, none_id, vars_id):
        _wait_slurm(job_id, {"COMPLETED", "FAILED"})
    assert (tmp_path / "all.out").read_text() == "exp=exp42 gw=unset extra=unset\n"
    assert (tmp_path / "none.out").read_text() == "exp=unset gw=unset extra=unset\n"
    assert (tmp_path / "vars.out").read_text() == "exp=exp42 gw=unset extra=x y\n"


def test_script_is_copied_at_submission_and_its_shebang_honoured(shim_env: Any, tmp_path: Path) -> None:
    _, run = shim_env()
    script = tmp_path / "train.py"
    script.write_text("#!/usr/bin/env python3\n#SBATCH -J pyjob\nimport sys\nprint('version', 1, sys.argv[1:])\n")
    job_id = _submitted(run("sbatch", "--begin=now+3", str(script), "a b"))
    script.write_text("#!/usr/bin/env python3\nprint('edited after submission')\n")
    rec = _wait_slurm(job_id, {"COMPLETED", "FAILED"})
    assert rec["JobState"] == "COMPLETED" and rec["JobName"] == "pyjob"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "version 1 ['a b']\n"


def test_name_dependency_and_hold_get_real_slurm_ids(shim_env: Any, tmp_path: Path) -> None:
    _, run = shim_env()
    name = f"eval X=1 run {time.time_ns()}"
    first = _submitted(run("sbatch", "--parsable", "-J", name, "--wrap", 'echo "$SLURM_JOB_NAME"; sleep 2'))
    second = run("sbatch", "--parsable", f"--dependency=afterok:{first}", "--wrap", "echo after")
    held = run("sbatch", "--parsable", "--hold", "-J", "held one", "--wrap", "echo released")
    second_id, held_id = _submitted(second), _submitted(held)
    assert second.stdout == f"{second_id}\n"
    shown = subprocess.run(["squeue", "-h", "-t", "all", "-n", name, "-o", "%i|%j"], capture_output=True, text=True)
    assert shown.stdout == f"{first}|{name}\n"
    assert _controller(second_id)["Dependency"].startswith(f"afterok:{first}")
    assert _controller(held_id)["Reason"] == "JobHeldUser"
    subprocess.run(["scontrol", "release", held_id], check=True)
    assert _wait_slurm(second_id, {"COMPLETED"})["JobState"] == "COMPLETED"
    assert _wait_slurm(held_id, {"COMPLETED"})["JobState"] == "COMPLETED"
    assert (tmp_path / f"slurm-{first}.out").read_text() == f"{name}\n"
    doomed = _submitted(run("sbatch", "--hold", "-J", f"doomed {name}", "--wrap", "echo never"))
    subprocess.run(["scancel", "--name", f"doomed {name}"], check=True)
    assert _wait_slurm(doomed, {"CANCELLED"})["JobState"] == "CANCELLED"


def test_two_node_job_sees_both_nodes(shim_env: Any, tmp_path: Path) -> None:
    _, run = shim_env()
    job_id = _submitted(
        run("sbatch", "-p", "hpc", "-N", "2", "--ntasks-per-node=1", "--wrap", "srun bash -c 'echo $SLURMD_NODENAME'")
    )
    rec = _wait_slurm(job_id, {"COMPLETED", "FAILED"})
    assert rec["JobState"] == "COMPLETED" and rec["NumNodes"] == "2"
    assert sorted((tmp_path / f"slurm-{job_id}.out").read_text().split()) == ["cpu1", "cpu2"]


def test_missing_output_directory_fails_like_slurm(shim_env: Any, tmp_path: Path) -> None:
    gw, run = shim_env()
    job_id = _submitted(run("sbatch", "-o", "no-such-dir/%j.out", "--wrap", "echo lost"))
    rec = _wait_slurm(job_id, {"COMPLETED", "FAILED"})
    assert rec["JobState"] == "FAILED" and rec["Reason"] == "JobLaunchFailure"
    job = [j for j in gw.client.jobs(limit=5) if j["backend_id"] == job_id][0]
    assert gw.wait_state(job["id"], {"FAILED", "COMPLETED"})["state"] == "FAILED"


def test_oom_kill_line_lands_in_the_users_output(shim_env: Any, tmp_path: Path, memory_enforced: None) -> None:
    gw, run = shim_env()
    code = "import time; x = bytearray(400 * 2**20); time.sleep(2)"
    job_id = _submitted(run("sbatch", "--mem=100M", "-o", "oom-%j.log", "--wrap", f"python3 -c '{code}'"))
    job = [j for j in gw.client.jobs(limit=5) if j["backend_id"] == job_id][0]
    assert gw.wait_state(job["id"], {"OUT_OF_MEMORY", "FAILED", "COMPLETED"}, timeout=60)["state"] == "OUT_OF_MEMORY"
    _wait_slurm(job_id, {"OUT_OF_MEMORY"})
    assert "oom-kill event" in (tmp_path / f"oom-{job_id}.log").read_text()


def test_failed_sbatch_is_a_clear_failure_not_a_fake_id(shim_env: Any, tmp_path: Path) -> None:
    down = (
        "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    gw, run = shim_env(sbatch_body=down)
    out = run("sbatch", "--wrap", "echo never")
    assert out.returncode == 1 and out.stdout == "", out
    assert "Batch job submission failed" in out.stderr and "Unable to contact slurm controller" in out.stderr
    assert [j["state"] for j in gw.client.jobs(limit=5)] == ["FAILED"]


# -- issue 11: the two Slurm bugs --------------------------------------------------------------------


def test_cancel_while_sbatch_is_in_flight_cancels_the_slurm_job(shim_env: Any, tmp_path: Path) -> None:
    started = tmp_path / "sbatch-started"
    slow = f"#!/bin/sh\ntouch '{started}'\nsleep 3\nexec /usr/bin/sbatch \"$@\"\n"
    gw, _ = shim_env(sbatch_body=slow)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        submitted = pool.submit(gw.client.submit, spec={"command": ["sleep", "300"], "workdir": str(tmp_path)})
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline, "sbatch never started"
            time.sleep(0.05)
        jobs = gw.client.jobs(limit=1)
        assert jobs and jobs[0]["backend_id"] is None
        gw.client.cancel(jobs[0]["id"])
        record = submitted.result(timeout=60)
    assert record["backend_id"], record
    assert _wait_slurm(record["backend_id"], {"CANCELLED"}, timeout=30)["JobState"] == "CANCELLED"
    assert gw.wait_state(record["id"], {"CANCELLED"}, timeout=30)["state"] == "CANCELLED"


def test_logs_of_a_running_slurm_job(shim_env: Any, tmp_path: Path) -> None:
    gw, run = shim_env()
    job_id = _submitted(run("sbatch", "-o", "live-%j.txt", "--wrap", "echo started; sleep 30"))
    job = [j for j in gw.client.jobs(limit=5) if j["backend_id"] == job_id][0]
    gw.wait_state(job["id"], {"RUNNING"}, timeout=30)
    deadline = time.monotonic() + 60
    while True:
        logs = gw.client.request("GET", f"/v1/jobs/{job['id']}/logs")
        if logs["lines"] == ["started"]:
            break
        assert time.monotonic() < deadline, logs
        time.sleep(0.2)
    assert logs["path"] == str(tmp_path / f"live-{job_id}.txt")
    gw.client.cancel(job["id"])


def test_gpu_jobs_land_on_partitions_with_acceptable_gpus(shim_env: Any, tmp_path: Path) -> None:
    gw, run = shim_env()
    typed = _submitted(run("sbatch", "-G", "h100:1", "--wrap", "echo on $SLURMD_NODENAME"))
    rec = _wait_slurm(typed, {"COMPLETED", "FAILED"})
    assert rec["JobState"] == "COMPLETED" and rec["Partition"] == "training" and rec["NodeList"] == "h100n1"
    either = gw.client.submit(
        spec={
            "command": ["true"],
            "workdir": str(tmp_path),
            "resources": {"gpus": 2, "gpu": {"type": ["h100", "a100"]}},
        }
    )
    rec = _wait_slurm(either["backend_id"], {"COMPLETED", "FAILED"})
    assert rec["JobState"] == "COMPLETED" and rec["NodeList"] in ("h100n1", "a100n1")
    too_big = gw.client.submit(
        spec={"command": ["true"], "workdir": str(tmp_path), "resources": {"gpus": 1, "gpu": {"min_memory": "500G"}}}
    )
    ended = gw.wait_state(too_big["id"], {"FAILED"})
    assert "no node of this cluster has GPUs" in (ended["reason"] or "")


def test_a_hung_gateway_never_runs_the_submission_later(shim_env: Any, tmp_path: Path) -> None:
    import signal
    import threading

    gw, run = shim_env()
    assert gw.proc is not None
    gw.proc.send_signal(signal.SIGSTOP)  # hung: the shim's request waits in the socket's backlog
    threading.Timer(4.0, gw.proc.send_signal, (signal.SIGCONT,)).start()
    out = run("sbatch", "--wrap", "echo late", env={"FRONTDESK_SBATCH_SUBMIT_WINDOW": "1.5"})
    assert out.returncode != 0 and "Submitted" not in out.stdout, out
    assert "gave up" in out.stderr
    assert gw.client.jobs(limit=5) == []  # nothing stored, nothing handed to Slurm


def test_controller_down_serves_the_cached_view_with_a_note(shim_env: Any, tmp_path: Path) -> None:
    down = tmp_path / "controller-down"
    scontrol = (
        f"#!/bin/sh\nif [ -e '{down}' ] && [ \"$1\" = -o ]; then\n"
        "  echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1\nfi\n"
        'exec /usr/bin/scontrol "$@"\n'
    )
    gw, run = shim_env(scontrol_body=scontrol)
    job_id = _submitted(run("sbatch", "--hold", "-J", "cached-one", "--wrap", "true"))
    first = run("squeue", "-h", "-j", job_id, "-o", "%i %j %T")
    assert first.stdout == f"{job_id} cached-one PENDING\n" and first.stderr == "", first
    down.touch()
    time.sleep(1.5)  # past the view's refresh interval: the next answer needs the controller
    cached = run("squeue", "-h", "-j", job_id, "-o", "%i %j %T")
    subprocess.run(["scancel", job_id], check=True)
    assert cached.returncode == 0 and cached.stdout == first.stdout, cached
    assert "the Slurm controller does not answer" in cached.stderr and "Unable to contact" in cached.stderr


def test_sacct_shows_the_peak_frontdesk_measured(shim_env: Any, tmp_path: Path, memory_enforced: None) -> None:
    gw, run = shim_env()
    code = "x = bytearray(80 * 2**20); print(len(x))"
    job_id = _submitted(run("sbatch", "--mem=300M", "--wrap", f"python3 -c '{code}'"))
    job = [j for j in gw.client.jobs(limit=5) if j["backend_id"] == job_id][0]
    assert gw.wait_state(job["id"], {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    out = run("sacct", "-P", "-n", "-j", job_id, "-o", "JobID,State,MaxRSS")
    jid, state, maxrss = out.stdout.strip().split("|")
    assert (jid, state) == (job_id, "COMPLETED") and maxrss.endswith("K") and int(maxrss[:-1]) >= 80 * 1024, out
