"""sbatch command lines into specs (the shim) and the option table both the shim and the plug-in use."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.backends.slurm.options import OptionError, split_command_line, validate_passthrough
from frontdesk.shims.sbatch import SbatchError, build_spec, parse_directives, slurm_memory, slurm_time

SCRIPT = """#!/bin/bash
#SBATCH -J train-it
#SBATCH --mem=4G -c 4   # four cores
#SBATCH -p training
#SBATCH --gres=gpu:a100:2
#SBATCH --time=1-02:00:00
#SBATCH -o logs/%x-%j.out
#SBATCH -A proj --ntasks-per-node=2

python train.py
#SBATCH --mem=1G
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "w d"
    d.mkdir()
    (d / "run.sh").write_text(SCRIPT)
    return d


def test_directives_then_the_command_line_wins(work: Path) -> None:
    sub = build_spec(["--time=30", "--export=ALL,A=1", "-A", "other", "run.sh", "x", "-p", "y"], str(work))
    spec = sub.spec
    assert spec["script"] == SCRIPT  # the content as submitted: what the guard checks and the job runs
    assert spec["name"] == "train-it" and spec["pool"] == "training" and spec["workdir"] == str(work)
    assert spec["resources"] == {"cpus": 4, "memory": 4 * 2**30, "walltime": 1800, "gpus": 2, "gpu": {"type": ["a100"]}}
    assert spec["slurm"] == {
        "options": ["--account=other", "--ntasks-per-node=2"],
        "job_name": "train-it",
        "args": ["x", "-p", "y"],
        "output": "logs/%x-%j.out",
        "export": "ALL,A=1",
    }


def test_wrap_is_the_script_sbatch_writes(work: Path) -> None:
    sub = build_spec(["--parsable", "-J", "eval X=1 run", "--wrap", "echo hi", "-D", "sub", "-N2"], str(work))
    assert sub.parsable and not sub.wait
    assert sub.spec["script"] == "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n"
    assert sub.spec["workdir"] == str(work / "sub") and sub.spec["name"] == "eval_X_1_run"
    assert sub.spec["slurm"]["job_name"] == "eval X=1 run" and sub.spec["slurm"]["options"] == ["--nodes=2"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--no-such", "run.sh"], "unrecognized option '--no-such'"),
        (["-Z", "run.sh"], "invalid option -- 'Z'"),
        (["--uid=0", "run.sh"], "--uid is not accepted"),
        (["--priority=9", "run.sh"], "--priority is not accepted"),
        (["missing.sh"], "Unable to open file missing.sh"),
        (["--wrap", "true", "run.sh"], "Script arguments not permitted"),
        (["--mem=lots", "--wrap", "true"], "Invalid value"),
        (["-p"], "requires an argument"),
    ],
)
def test_what_sbatch_refuses_fails_with_its_message(work: Path, argv: list[str], message: str) -> None:
    with pytest.raises(SbatchError, match=message.replace("(", r"\(").replace("-", r"\-")):
        build_spec(argv, str(work))


def test_a_script_without_shebang_is_refused_like_sbatch(work: Path) -> None:
    (work / "plain.sh").write_text("echo hi\n")
    with pytest.raises(SbatchError, match="does not look like a batch script"):
        build_spec(["plain.sh"], str(work))


@pytest.mark.parametrize("stdin", [False, True])
def test_dos_line_breaks_and_an_empty_script_are_refused_like_sbatch(work: Path, stdin: bool) -> None:
    def build(text: str) -> Any:
        (work / "s.sh").write_bytes(text.encode())
        return build_spec([], str(work), stdin=io.StringIO(text)) if stdin else build_spec(["s.sh"], str(work))

    with pytest.raises(SbatchError, match=r"contains DOS line breaks \(\\r\\n\)\nsbatch: error: instead of"):
        build("#!/bin/bash\r\necho dos\r\n")
    with pytest.raises(SbatchError, match="Batch script is empty!"):
        build("")
    assert build_spec(["--wrap", "echo dos\r\n"], str(work)).spec["script"].endswith("echo dos\r\n\n")  # as sbatch


def test_script_from_standard_input(work: Path) -> None:
    sub = build_spec(["-J", "piped"], str(work), stdin=io.StringIO("#!/bin/sh\necho piped\n"))
    assert sub.spec["script"] == "#!/bin/sh\necho piped\n" and sub.spec["slurm"]["job_name"] == "piped"


def test_non_gpu_gres_and_unlimited_time_pass_through(work: Path) -> None:
    sub = build_spec(["--gres=gpu:1,nic:1", "-t", "UNLIMITED", "--mem=0", "--wrap", "true"], str(work))
    assert sub.spec["slurm"]["options"] == ["--mem=0", "--time=UNLIMITED", "--gres=gpu:1,nic:1"]
    assert "resources" not in sub.spec


def test_help_and_version_submit_nothing(work: Path) -> None:
    assert build_spec(["--version"], str(work)).info and build_spec(["-h"], str(work)).info


def test_split_keeps_script_arguments_that_look_like_options() -> None:
    opts, rest = split_command_line(["-n", "2", "--exclusive", "run.sh", "--exclusive", "-n", "3"])
    assert [(o.name, v) for o, v in opts] == [("ntasks", "2"), ("exclusive", None)]
    assert rest == ["run.sh", "--exclusive", "-n", "3"]


def test_passthrough_validation() -> None:
    assert validate_passthrough(["--nodes=2", "--exclusive", "--exclusive=user"]) == [
        "--nodes=2",
        "--exclusive",
        "--exclusive=user",
    ]
    assert validate_passthrough(["--nice", "--nice=5"]) == ["--nice", "--nice=5"]  # lowering one's own: fine
    operator = (["--nice=-5"], ["--nice= -1"], ["--reboot"])  # an operator's, granted to root's sbatch --uid
    for bad in (["--uid=0"], ["--nodes"], ["-N2"], ["--job-name=x"], ["--comment=a\nb"], ["--bogus=1"], *operator):
        with pytest.raises(OptionError):
            validate_passthrough(bad)


def test_directives_stop_at_the_first_command() -> None:
    assert parse_directives(SCRIPT)[-3:] == ["-A", "proj", "--ntasks-per-node=2"]


@given(st.integers(0, 9), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_slurm_time_forms(d: int, h: int, m: int, s: int) -> None:
    assert slurm_time(f"{d}-{h}:{m}:{s}") == d * 86400 + h * 3600 + m * 60 + s
    assert slurm_time(f"{h}:{m}:{s}") == h * 3600 + m * 60 + s
    assert slurm_time(f"{m}:{s}") == m * 60 + s
    assert slurm_time(str(m)) == m * 60


def test_slurm_memory_bare_number_is_megabytes() -> None:
    assert slurm_memory("500") == 500 * 2**20 and slurm_memory("2G") == 2 * 2**30 and slurm_memory("8gb") == 8 * 2**30


def test_shim_never_passes_a_submission_to_the_real_sbatch(tmp_path: Path) -> None:
    """No gateway and an unknown flag: sbatch fails; the real sbatch (a sentinel) is never run."""
    from frontdesk.cli.slurm import install_shims

    shims = tmp_path / "shims"
    install_shims(shims)
    marker = tmp_path / "ran"
    real = tmp_path / "real-sbatch"
    real.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    real.chmod(0o755)
    env = {"PATH": f"{shims}:/usr/bin:/bin", "FRONTDESK_REAL_SBATCH": str(real)}
    env["FRONTDESK_SOCKET"] = str(tmp_path / "no.sock")
    for argv in (["--bogus", "--wrap", "true"], ["--mail-type=END", "--wrap", "true"]):
        out = subprocess.run([sys.executable, str(shims / "sbatch"), *argv], env=env, capture_output=True, text=True)
        assert out.returncode != 0 and out.stdout == "", out
    assert not marker.exists()


def test_input_environment_sits_between_the_script_and_the_command_line(work: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SBATCH_PARTITION", "agent")
    monkeypatch.setenv("SBATCH_ACCOUNT", "envacct")
    monkeypatch.setenv("SBATCH_EXCLUSIVE", "")
    sub = build_spec(["run.sh"], str(work))
    assert sub.spec["pool"] == "agent"  # over the script's `-p training`
    assert "--account=envacct" in sub.spec["slurm"]["options"] and "--exclusive" in sub.spec["slurm"]["options"]
    assert build_spec(["-p", "hpc", "-A", "cli", "run.sh"], str(work)).spec["pool"] == "hpc"
