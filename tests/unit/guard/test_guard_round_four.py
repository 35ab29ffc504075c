"""The guard's fourth round: gaps left by round three, closed as classes.

- a container, sandbox or chroot that maps a host path in, then acts on it (`docker run -v ~:/h IMG rm -rf /h`);
- here-strings after another redirection (`cat > F <<< X`), which the grammar cannot parse;
- `xargs -I{}` (and loops) filling in the entries of a directory the line lists (`ls ~ | xargs -I{} rm -rf ~/{}`);
- destroying a file's content without deleting it (truncate, shred, fallocate --punch-hole) over a whole tree;
- interpreters and tools that run code from an option (`emacs --eval`, `nvim --cmd`, `sqlite3 .shell`, ...).

Canaries only: every command here is a string the guard reads, never runs.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.guard.checker import check
from frontdesk.guard.model import Decision

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))
from corpus_loader import corpus_context, load_corpus  # noqa: E402

CTX = corpus_context()  # HOME=/home/alice, cwd ~/project, workstation


def verdict(command: str) -> tuple[Decision, str | None]:
    result = check(command, CTX)
    return result.decision, result.rule


# -- containers, sandboxes and chroots that map a host path in ------------------------------------------
MOUNTED = [
    ("docker run -v ~:/h img rm -rf /h", "fs.rm-root"),
    ("docker run --rm -v $HOME:/host alpine rm -rf /host", "fs.rm-root"),
    ("docker run --rm -it --volume=/home/alice:/w ubuntu rm -rf /w/", "fs.rm-root"),
    ("docker run --mount type=bind,source=/home/alice,target=/h img rm -rf /h", "fs.rm-root"),
    ("podman run --mount type=bind,src=/,dst=/mnt img rm -rf /mnt", "fs.rm-root"),
    ("nerdctl run -v /:/mnt img rm -rf /mnt", "fs.rm-root"),
    ("docker container run -v /:/host img chroot /host rm -rf /", "fs.rm-root"),
    ("docker run -v ~:/h img sh -c 'rm -rf /h/*'", "fs.rm-root"),
    ("docker run --entrypoint sh -v ~:/h img -c 'rm -rf /h'", "fs.rm-root"),
    ("docker run -v ~:/h -w /h img rm -rf .", "fs.rm-root"),
    ("docker run -v ~/.ssh:/k:ro img rm -rf /k", "fs.rm-protected"),
    ("apptainer exec --bind ~:/h img.sif rm -rf /h", "fs.rm-root"),
    ("singularity exec -B /home/alice:/data img.sif rm -rf /data", "fs.rm-root"),
    ("apptainer run -B /tmp,/home/alice:/d img.sif rm -rf /d", "fs.rm-root"),
    ("apptainer exec --bind /scratch/alice:/s img.sif rm -rf /s", "fs.rm-protected"),
    ("bwrap --bind ~ /h rm -rf /h", "fs.rm-root"),
    ("bwrap --ro-bind /usr /usr --bind ~ /home/u --chdir /home/u rm -rf .", "fs.rm-root"),
    ("systemd-nspawn -D /srv/c --bind ~:/h rm -rf /h", "fs.rm-root"),
    ("systemd-nspawn -D ~ rm -rf /", "fs.rm-root"),
    ("chroot ~ rm -rf /", "fs.rm-root"),
    ("docker run -v /home/alice:/h img mkfs.ext4 /dev/fd-does-not-exist", "disk.wipe"),
]


@pytest.mark.parametrize(("command", "rule"), MOUNTED)
def test_a_container_acting_on_a_mapped_host_path_is_checked_on_the_host_path(command: str, rule: str) -> None:
    assert verdict(command) == (Decision.DENY, rule), command


@pytest.mark.parametrize(
    "command",
    [
        "docker run -v ~/.ssh:/s img cat /s/id_rsa",
        "podman run --mount type=bind,src=/home/alice/.ssh,dst=/k img cat /k/id_ed25519",
    ],
)
def test_reading_keys_through_a_mount_is_reading_keys(command: str) -> None:
    assert verdict(command) == (Decision.ASK, "secret.read"), command


@pytest.mark.parametrize(
    "command",
    [
        'docker run --rm -it -v "$PWD":/work -w /work python:3.12 python train.py',
        "docker run --rm -v $(pwd):/src -w /src node:20 npm test",
        "docker run --gpus all --rm nvidia/cuda:12.2.0-base nvidia-smi",
        "docker run -d -p 8080:80 --name web nginx",
        "docker run --rm -v ~/data:/data img rm -rf /data/tmp",
        "docker run --rm -v cache:/root/.cache img pip install -r requirements.txt",
        "apptainer exec img.sif python train.py",
        "singularity run --nv -B /data img.sif python x.py",
        "apptainer exec --bind /scratch/alice/run1:/out img.sif rm -rf /out/tmp",
        "bwrap --ro-bind / / --dev /dev --tmpfs /tmp python3 sandboxed.py",
        "docker build -t x .",
        "docker run img",
    ],
)
def test_ordinary_container_runs_stay_allowed(command: str) -> None:
    assert verdict(command)[0] is Decision.ALLOW, command


# -- here-strings after another redirection (the grammar splits `<<<` into `<<` and `< X`) -------------------
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat > F <<< X", (Decision.ALLOW, None)),
        ("cat 2>/dev/null <<< X", (Decision.ALLOW, None)),
        ("cat > notes.txt <<< 'hello world'", (Decision.ALLOW, None)),
        ('cat > F <<< "$(date)"', (Decision.ALLOW, None)),
        ("python3 - > out.txt <<< 'print(1)'", (Decision.ALLOW, None)),
        ("bash > /tmp/log <<< 'rm -rf ~'", (Decision.DENY, "fs.rm-root")),
        ("bash 2>&1 <<< 'rm -rf ~'", (Decision.DENY, "fs.rm-root")),
        ("cat >> ~/.bashrc <<< 'rm -rf ~'", (Decision.DENY, "fs.rm-root")),
        ("cat > x.sh <<< 'rm -rf ~' && bash x.sh", (Decision.DENY, "fs.rm-root")),
        ("crontab - 2>/dev/null <<< '* * * * * rm -rf ~'", (Decision.DENY, "fs.rm-root")),
        ("ssh host > out.log <<< 'rm -rf ~'", (Decision.DENY, "fs.rm-root")),
        ("sudo bash > /dev/null <<< 'mkfs.ext4 /dev/fd-does-not-exist'", (Decision.DENY, "disk.wipe")),
        ("cat > F <<", (Decision.ASK, "parse.error")),  # a real parse error stays one
    ],
)
def test_a_here_string_after_another_redirection_is_read_as_one(
    command: str, expected: tuple[Decision, str | None]
) -> None:
    assert verdict(command) == expected, command


# -- the entries of a listed directory, filled in one at a time ---------------------------------------------
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls ~ | xargs -I{} rm -rf ~/{}", (Decision.DENY, "fs.rm-root")),
        ("ls ~ | xargs -I % rm -rf ~/%", (Decision.DENY, "fs.rm-root")),
        ('ls -A ~ | xargs -I{} rm -rf "$HOME/{}"', (Decision.DENY, "fs.rm-root")),
        ("ls ~ | sudo xargs -I{} rm -rf ~/{}", (Decision.DENY, "fs.rm-root")),
        ("ls ~ | xargs -i rm -rf ~/{}", (Decision.DENY, "fs.rm-root")),
        ("cd ~ && ls | xargs -I{} rm -rf {}", (Decision.DENY, "fs.rm-root")),
        ("cd ~ && ls | xargs rm -rf", (Decision.DENY, "fs.rm-root")),
        ("ls ~ | parallel rm -rf ~/{}", (Decision.DENY, "fs.rm-root")),
        ("xargs -I{} rm -rf ~/{} < <(ls ~)", (Decision.DENY, "fs.rm-root")),
        ("ls ~ | xargs -P4 -I{} sh -c 'rm -rf ~/{}'", (Decision.DENY, "fs.rm-root")),
        ("ls ~/data | xargs -I{} sh -c 'gzip ~/data/{}'", (Decision.ALLOW, None)),
        ("xargs -I{} du -sh ~/{} < <(ls ~)", (Decision.ALLOW, None)),
        ("ls ~ | grep -v keep | xargs -I{} rm -rf ~/{}", (Decision.DENY, "fs.rm-root")),  # all but one: ~/*
        ("ls ~ | grep keep | xargs -I{} rm -rf ~/{}", (Decision.ASK, "fs.rm-wide")),  # the entries it picks: asks
        ("for f in $(ls ~); do rm -rf ~/$f; done", (Decision.DENY, "fs.rm-root")),
        ('for f in `ls -A ~`; do rm -rf "$HOME/$f"; done', (Decision.DENY, "fs.rm-root")),
        ("ls ~/data | xargs -I{} rm -rf ~/data/{}", (Decision.ASK, "fs.rm-wide")),
        ("ls | xargs -I{} rm -rf {}", (Decision.ASK, "fs.rm-wide")),
        ("ls /tmp/build | xargs -I{} rm -rf /tmp/build/{}", (Decision.ALLOW, None)),
        ("ls ~ | xargs -I{} du -sh ~/{}", (Decision.ALLOW, None)),
        ("ls ~/data | xargs -I{} cp ~/data/{} /tmp/", (Decision.ALLOW, None)),
        ("ls *.log | xargs -I{} rm {}", (Decision.ALLOW, None)),
        ("ls ~/data | parallel gzip ~/data/{}", (Decision.ALLOW, None)),
        ("for f in $(ls ~/data); do python proc.py ~/data/$f; done", (Decision.ALLOW, None)),
    ],
)
def test_each_entry_of_a_listed_directory_is_the_directorys_glob(
    command: str, expected: tuple[Decision, str | None]
) -> None:
    assert verdict(command) == expected, command


# -- destroying a file's content without deleting it ----------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("truncate -s 0 ~/data/*", (Decision.ASK, "fs.rm-wide")),
        ("shred -u ~/data/*", (Decision.ASK, "fs.rm-wide")),
        ("shred -n 3 -z ~/*", (Decision.ASK, "fs.rm-wide")),
        ("fallocate --punch-hole -o 0 -l 1G ~/data/*", (Decision.ASK, "fs.rm-wide")),
        ("rm -f ~/*", (Decision.ASK, "fs.rm-wide")),
        ("rm -f *", (Decision.ASK, "fs.rm-wide")),
        ("find ~ -type f -exec truncate -s 0 {} +", (Decision.DENY, "fs.rm-root")),  # every file: -type f no filter
        ("find ~ -exec truncate -s 0 {} +", (Decision.DENY, "fs.rm-root")),
        ("fallocate -p -o 0 -l 4096 ~/.ssh/id_rsa", (Decision.DENY, "fs.rm-protected")),
        ("shred ~/.bashrc", (Decision.DENY, "fs.rm-protected")),
        ("dd if=/dev/zero of=~/.ssh/id_rsa bs=1k count=4", (Decision.DENY, "fs.rm-protected")),
        ("cp /dev/null ~/.ssh/authorized_keys", (Decision.DENY, "fs.rm-protected")),
        ("find . -fprint ~/.bashrc", (Decision.DENY, "fs.rm-protected")),
        ("find . -fprintf ~/.bashrc '%p'", (Decision.DENY, "fs.rm-protected")),
        ("find . -fls ~/.ssh/authorized_keys", (Decision.DENY, "fs.rm-protected")),
        ("gcc -o ~/.bashrc x.c", (Decision.DENY, "fs.rm-protected")),
        ("script ~/.bashrc", (Decision.DENY, "fs.rm-protected")),
        # one file emptied is one file deleted: fine in the agent's own tree, as rm is
        ("truncate -s 0 ~/project/out.log", (Decision.ALLOW, None)),
        ("truncate -s 0 logs/*.log", (Decision.ALLOW, None)),
        (": > results.csv", (Decision.ALLOW, None)),
        ("cp /dev/null out.log", (Decision.ALLOW, None)),
        ("fallocate -l 1G /tmp/swapfile", (Decision.ALLOW, None)),
        ("truncate -s +1M disk.img", (Decision.ALLOW, None)),
        ("rm -f *.o", (Decision.ALLOW, None)),
        ("rm -f /tmp/x/*", (Decision.ALLOW, None)),
        ("find . -name '*.py' -fprint files.txt", (Decision.ALLOW, None)),
        ("gcc -O2 -o build/app main.c", (Decision.ALLOW, None)),
        ("script -q /dev/null", (Decision.ALLOW, None)),
    ],
)
def test_destroying_content_is_deleting(command: str, expected: tuple[Decision, str | None]) -> None:
    assert verdict(command) == expected, command


# -- interpreters and tools that run code given in an option -------------------------------------------------
@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("emacs --eval '(shell-command \"rm -rf ~\")'", "fs.rm-root"),
        ("emacs -batch --eval '(delete-directory \"~\" t)'", "fs.rm-root"),
        ('emacs --batch --eval \'(call-process "rm" nil nil nil "-rf" "/home/alice")\'', "fs.rm-root"),
        ("emacsclient --eval '(async-shell-command \"mkfs.ext4 /dev/fd-does-not-exist\")'", "disk.wipe"),
        ("nvim --cmd '!rm -rf ~'", "fs.rm-root"),
        ("vim -c ':r !rm -rf ~'", "fs.rm-root"),
        ("vim -c 'call system(\"rm -rf ~\")'", "fs.rm-root"),
        ("sqlite3 x.db '.shell rm -rf ~'", "fs.rm-root"),
        ("sqlite3 x.db <<< '.system rm -rf ~'", "fs.rm-root"),
        ("psql -c '\\! rm -rf ~'", "fs.rm-root"),
        ("mysql -e 'system rm -rf ~'", "fs.rm-root"),
        ("less +'!rm -rf ~' x", "fs.rm-root"),
        ("man -P 'rm -rf ~' ls", "fs.rm-root"),
        ("lua -e 'os.execute(\"rm -rf ~\")'", "fs.rm-root"),
        ("python -c 'import shutil,os; shutil.rmtree(os.path.expanduser(\"~\"))'", "fs.rm-root"),
        ("python3 -c \"import shutil; shutil.rmtree('/home/alice')\"", "fs.rm-root"),
        ("python3 -c 'import shutil, pathlib; shutil.rmtree(pathlib.Path.home())'", "fs.rm-root"),
        ("perl -e 'use File::Path; rmtree($ENV{HOME})'", "fs.rm-root"),
        ("ruby -e 'require \"fileutils\"; FileUtils.rm_rf(Dir.home)'", "fs.rm-root"),
        ('node -e \'require("fs").rmSync(require("os").homedir(), {recursive:true})\'', "fs.rm-root"),
        ("Rscript -e 'unlink(\"~\", recursive=TRUE)'", "fs.rm-root"),
        ("deno eval 'Deno.removeSync(Deno.env.get(\"HOME\"), {recursive:true})'", "fs.rm-root"),
    ],
)
def test_code_given_in_an_option_is_read(command: str, rule: str) -> None:
    assert verdict(command) == (Decision.DENY, rule), command


@pytest.mark.parametrize(
    "command",
    [
        "emacs -Q --batch --eval '(message \"hi\")'",
        "emacs --batch -l init.el --eval '(org-babel-tangle)'",
        "vim -c ':wq' x",
        "nvim --cmd 'set rtp+=.' -c 'PlugInstall' -c qa",
        "sqlite3 x.db '.tables'",
        "sqlite3 x.db 'select count(*) from runs'",
        "psql -c 'select 1'",
        "mysql -e 'show databases'",
        "less +G log.txt",
        "less +F slurm-123.out",
        "man -P cat ls",
        'python -c \'import shutil; shutil.copy("a", "b")\'',
    ],
)
def test_ordinary_option_code_stays_allowed(command: str) -> None:
    assert verdict(command)[0] is Decision.ALLOW, command


# -- scripts named by text the line writes (a crontab, an at file, a script) are read from disk ---------------
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "echo '* * * * * /home/alice/project/nightly_canary.sh' > /tmp/c; crontab /tmp/c",
            (Decision.DENY, "disk.wipe"),
        ),
        ("echo '* * * * * bash ~/project/nightly_canary.sh' > /tmp/c && crontab /tmp/c", (Decision.DENY, "disk.wipe")),
        ("echo 'bash ~/project/nightly_canary.sh' > /tmp/a; at -f /tmp/a now", (Decision.DENY, "disk.wipe")),
        ("echo 'bash nightly_canary.sh' > x.sh; bash x.sh", (Decision.DENY, "disk.wipe")),
        # a Python script's shell-outs and tree deletions are read like -c code
        ("python3 ~/project/wipe_home.py", (Decision.DENY, "fs.rm-root")),
        ("echo 'python3 ~/project/wipe_home.py' > /tmp/a; at -f /tmp/a now", (Decision.DENY, "fs.rm-root")),
        ("echo '0 3 * * * ~/project/run_experiment.sh' > /tmp/c; crontab /tmp/c", (Decision.ALLOW, None)),
    ],
)
def test_scripts_named_by_text_the_line_writes_are_read(command: str, expected: tuple[Decision, str | None]) -> None:
    assert verdict(command) == expected, command


# -- every dangerous corpus row handed on in this round's forms keeps its verdict ----------------------------
def _lisp(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


FORMS = [
    lambda c: f"docker run --rm -v /home/alice:/home/alice -w /home/alice/project img bash -c {shlex.quote(c)}",
    lambda c: f"bwrap --bind / / --dev /dev bash -c {shlex.quote(c)}",
    lambda c: f"bash 2>/dev/null <<< {shlex.quote(c)}",
    lambda c: f"emacs --batch --eval {shlex.quote('(shell-command ' + _lisp(c) + ')')}",
    lambda c: f"nvim --cmd {shlex.quote('!' + c)}",
    lambda c: f"sqlite3 x.db {shlex.quote('.shell ' + c)}",
    lambda c: f"psql -c {shlex.quote(chr(92) + '! ' + c)}",
    lambda c: f"python3 -c {shlex.quote('import os; os.system(' + repr(c) + ')')}",
    lambda c: f"echo {shlex.quote('* * * * * ' + c)} > /tmp/c; crontab /tmp/c",
]
KEYWORDS = ("(", "{", "!", "if", "for", "while", "until", "select", "case", "function", "export", "unset", "cd")


def _plain_rows() -> list[str]:
    rows = []
    for case in load_corpus():
        first = case.command.split(" ", 1)[0]
        plain = not case.command.startswith(KEYWORDS) and "=" not in first and "()" not in case.command
        if case.dangerous and case.role.value == "workstation" and not case.gpus and plain and "\n" not in case.command:
            rows.append(case.command)
    return rows[::3]


@pytest.mark.parametrize("form", range(len(FORMS)))
def test_a_dangerous_row_handed_on_in_this_rounds_forms_keeps_its_verdict(form: int) -> None:
    weaker = []
    for command in _plain_rows():
        if "\\" in command:  # a backslash-escaped name stays one word only through shell quoting
            continue
        base = check(command, CTX).decision
        wrapped = check(FORMS[form](command), CTX).decision
        if wrapped.rank < base.rank:
            weaker.append((command, base.value, wrapped.value))
    assert not weaker, weaker[:5]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 -c 'import os; os.system(\"reboot\")'", (Decision.DENY, "sys.power")),
        ("perl -e 'system(\"poweroff\")'", (Decision.DENY, "sys.power")),
        ("bwrap --bind / / echo 'rm -rf ~' | bash", (Decision.DENY, "fs.rm-root")),
        ("systemd-nspawn -D /srv/c echo 'mkfs.ext4 /dev/fd-does-not-exist' | bash", (Decision.DENY, "disk.wipe")),
        ("echo '* * * * * rm -rf $( ( (' > /tmp/c; crontab /tmp/c", (Decision.ASK, "parse.error")),
        ("python3 -c 'import app; app.run(\"main\")'", (Decision.ALLOW, None)),
        ("python3 -c 'import os; os.system(\"rm\\\\ -rf\\\\ /\")'", (Decision.ASK, "shell.obfuscated")),
        ("emacs --eval '(shell-command \"rm\\\\ -rf\\\\ /\")'", (Decision.ASK, "shell.obfuscated")),
        ("python3 -c 'import os; os.system(\"echo a\\nrm -rf ~\")'", (Decision.DENY, "fs.rm-root")),
    ],
)
def test_single_word_shell_outs_pipes_out_of_sandboxes_and_unreadable_tables(
    command: str, expected: tuple[Decision, str | None]
) -> None:
    assert verdict(command) == expected, command


@pytest.mark.parametrize(
    "command",
    [
        "chroot /mnt/sysimage mkfs.ext4 /dev/fd-does-not-exist",
        "systemd-nspawn -D /srv/c mkfs.ext4 /dev/fd-does-not-exist",
    ],
)
def test_devices_stay_the_hosts_under_a_new_root(command: str) -> None:
    assert verdict(command) == (Decision.DENY, "disk.wipe"), command


# -- the same classes, found afresh: HPC container runners, option values that are code, cmake -E -------------
@pytest.mark.parametrize(
    "command",
    [
        "podman unshare rm -rf ~",
        "buildah unshare rm -rf ~",
        "singularity shell img.sif <<< 'rm -rf ~'",
        "srun --container-image=ubuntu --container-mounts=/home/alice:/h rm -rf /h",
        "enroot start --mount /home/alice:/h img rm -rf /h",
        "ch-run -b /home/alice:/h img -- rm -rf /h",
        "udocker run -v /home/alice:/h img rm -rf /h",
        "proot -r /srv/r -b /home/alice:/h rm -rf /h",
        "arch-chroot ~ rm -rf /",
        "tar --to-command='rm -rf ~' -xf x.tar",
        "tar -I 'rm -rf ~' -cf x.tar .",
        "tar --use-compress-program='rm -rf ~' -cf x.tar .",
        "tar -cf /dev/null x --checkpoint=1 --checkpoint-action=exec='rm -rf ~'",
        "rsync -e 'rm -rf ~' x host:",
        "ssh -o ProxyCommand='rm -rf ~' host",
        "ssh -o PermitLocalCommand=yes -o LocalCommand='rm -rf ~' host",
        "zip -T -TT 'rm -rf ~' x.zip f",
        "make --eval='all:; rm -rf ~'",
        "cmake -E rm -rf ~",
        "cmake -E remove_directory /home/alice",
        "R -e 'system(\"rm -rf ~\")'",
    ],
)
def test_fresh_members_of_this_rounds_classes_are_denied(command: str) -> None:
    assert verdict(command) == (Decision.DENY, "fs.rm-root"), command


@pytest.mark.parametrize(
    "command",
    [
        "proot -0 ls",
        "enroot start --mount /scratch/alice/data:/data img python train.py --data /data",
        "ch-run -b /scratch/alice:/mnt/0 img -- python x.py",
        "srun --container-mounts=$PWD:/work --container-workdir=/work -n 1 make test",
        "podman unshare ls -la ~/.local/share/containers",
        "apptainer shell img.sif",
        "tar -I 'zstd -19 -T0' -cf x.tar.zst results/",
        "tar --use-compress-program=pigz -cf x.tgz results",
        "rsync -e 'ssh -p 2222' -a src/ host:dst/",
        "ssh -o ProxyCommand='ssh -W %h:%p bastion' node01",
        "ssh -o StrictHostKeyChecking=no -o ConnectTimeout=5 host uptime",
        "make -j4 --eval 'CFLAGS+=-O2'",
        "cmake -E rm -rf build",
        "cmake -E make_directory build",
        "zip -T x.zip f",
        "R --vanilla -e 'print(1)'",
    ],
)
def test_ordinary_uses_of_the_fresh_members_stay_allowed(command: str) -> None:
    assert verdict(command)[0] is Decision.ALLOW, command


def test_the_lazily_imported_tables_match_the_names_that_reach_them() -> None:
    from frontdesk.guard import wrappers
    from frontdesk.guard.mounts import CONTAINERS
    from frontdesk.guard.optcode import CLIENTS, OPTION_CODE

    assert wrappers.CONTAINER_PROGS == set(CONTAINERS)
    assert wrappers.OPTION_CODE_PROGS == set(OPTION_CODE)
    assert wrappers.CLIENT_PROGS == CLIENTS


def test_a_hidden_letter_in_an_interpreters_string_still_asks() -> None:
    assert verdict("python3 -c 'import os; os.system(\"r\\u200bm -rf /\")'")[0] is Decision.ASK


@pytest.mark.parametrize(
    "command",
    [
        "python3 -c 'import shutil, pathlib; shutil.rmtree(pathlib.Path.home() / \"x\")'",
        'python3 -c \'import shutil, os; shutil.rmtree(os.environ["HOME"] + "/cache")\'',
        "python3 -c 'import shutil; shutil.rmtree(\"/home/alice\" + sub)'",
    ],
)
def test_a_home_that_is_only_part_of_the_deleted_path_is_not_the_home(command: str) -> None:
    assert verdict(command) == (Decision.ASK, "interp.delete"), command  # deletes something: asks, as before


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git bisect run rm -rf ~", (Decision.DENY, "fs.rm-root")),
        ("git rebase -x 'rm -rf ~' HEAD~3", (Decision.DENY, "fs.rm-root")),
        ("git rebase --exec='rm -rf ~' main", (Decision.DENY, "fs.rm-root")),
        ("git submodule foreach 'rm -rf ~'", (Decision.DENY, "fs.rm-root")),
        ("git -C sub submodule foreach --recursive 'mkfs.ext4 /dev/fd-does-not-exist'", (Decision.DENY, "disk.wipe")),
        ("git clone -u 'rm -rf ~' host:repo", (Decision.DENY, "fs.rm-root")),
        ('for f in ~/data/*; do : > "$f"; done', (Decision.ASK, "fs.rm-wide")),
        ("echo | tee ~/data/*", (Decision.ASK, "fs.rm-wide")),
        ("git submodule foreach --recursive git pull", (Decision.ALLOW, None)),
        ("git bisect run make test", (Decision.ALLOW, None)),
        ("git rebase -x 'pytest -q' HEAD~3", (Decision.ALLOW, None)),
        ("git push -u origin feature", (Decision.ALLOW, None)),
        ("echo done | tee -a ~/data/*", (Decision.ALLOW, None)),
    ],
)
def test_git_subcommands_that_run_commands_and_emptied_globs(
    command: str, expected: tuple[Decision, str | None]
) -> None:
    assert verdict(command) == expected, command


_FORM_CHAIN = st.lists(
    st.sampled_from(
        [
            "docker run --rm -v /home/alice:/home/alice img {c}",
            "bwrap --bind / / {c}",
            "apptainer exec img.sif {c}",
            "srun --container-mounts=/home/alice:/home/alice {c}",
            "bash 2>/dev/null <<< {q}",
            "emacs --batch --eval {lisp}",
            "sqlite3 x.db {dot}",
            "python3 -c {py}",
            "git bisect run {c}",
            "tar --to-command={q} -xf x.tar",
            "ssh -o ProxyCommand={q} host",
            "script -qc {q} /dev/null",
        ]
    ),
    min_size=1,
    max_size=3,
)


@given(_FORM_CHAIN, st.sampled_from(["rm -rf ~", "rm -fr /", "mkfs.ext4 /dev/fd-does-not-exist"]))
@settings(max_examples=120, deadline=None)
def test_any_chain_of_this_rounds_forms_keeps_a_deny(chain: list[str], canary: str) -> None:
    command = canary
    for template in chain:
        command = template.format(
            c=command,
            q=shlex.quote(command),
            lisp=shlex.quote(f"(shell-command {_lisp(command)})"),
            dot=shlex.quote(f".shell {command}"),
            py=shlex.quote(f"import os; os.system({command!r})"),
        )
    assert check(command, CTX).decision is Decision.DENY, command
