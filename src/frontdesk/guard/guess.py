"""Commands found in the words of a program the look-through table does not know.

`cgexec -g cpu:x rm -rf ~`, a site's own `run-on-gpu rm -rf ~`: when a word names a command that does harm on
its own and has words after it, the program most likely runs it. Such a command is checked like any other,
with its deny softened to ask (the program may only print its words).
"""

from __future__ import annotations

from frontdesk.guard.words import Word

__all__ = ["guess_inner", "GUESSED"]

GUESSED = "runs its arguments?"
"""The via tag of a command found in the arguments of a program the table does not know (`cgexec -g x rm -rf
~`, a site's own wrapper): checked like any command, its deny softened to ask (the program may only print)."""
# Commands that do harm on their own: when one of these appears in the words of an unknown program, the
# program most likely runs it.
_HEADS = frozenset(
    "rm rmdir shred unlink srm dd wipefs truncate chmod chown chgrp find kill pkill killall scancel shutdown "
    "reboot poweroff halt bash sh zsh dash ksh sudo doas su crontab mv eval mkfs".split()
)
# Programs whose words name commands without running them (docs, search, packages, version control).
_NAMES_ONLY = frozenset(
    "echo printf man info whatis apropos help tldr which type whereis hash complete compgen command-not-found "
    "git hg svn apt apt-get apt-cache aptitude dnf yum zypper pacman brew pip pip3 pipx conda mamba micromamba "
    "npm yarn pnpm cargo gem go dpkg dpkg-query rpm snap flatpak spack module ml grep egrep fgrep rg ag ack "
    "cat less more head tail wc sort uniq cut tr ls file stat du df locate plocate mlocate test [ [[ true false "
    "history fc read local export declare typeset readonly set unset shift return exit cd pushd popd dirs "
    "docker podman nerdctl kubectl helm aws gsutil gcloud az rclone s3cmd mc hdfs lfs systemctl journalctl "
    "tmux screen pgrep pidof ps top htop lsof fuser strace ltrace printenv env alias unalias bind trap jobs "
    "wait fg bg disown kill ulimit umask getopts let source . exec builtin".split()
)


def guess_inner(prog: str, args: list[Word]) -> list[Word] | None:
    """The command inside an unknown program's words: from the first word that names a harmful command and
    has words after it (`my-wrapper --opt x rm -rf ~` -> `rm -rf ~`); None when there is none."""
    if not prog or prog in _NAMES_ONLY or prog in _HEADS or prog.startswith("mkfs"):
        return None
    for j, w in enumerate(args[:-1]):
        name = w.text.rsplit("/", 1)[-1]
        if not w.dynamic and (name in _HEADS or name.startswith("mkfs.")):
            return args[j:]
    return None
