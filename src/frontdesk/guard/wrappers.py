"""Look through wrappers: sudo, env, nice, timeout, srun, xargs, find -exec, bash -c, eval, python -m ..."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from typing import Any

from frontdesk.guard.guess import GUESSED, guess_inner
from frontdesk.guard.lookthrough import LOOK_THROUGH, command_after, opt_width
from frontdesk.guard.perinput import parallel_commands, xargs_commands
from frontdesk.guard.shellout import (
    LATER,
    awk_commands,
    gdb_commands,
    later_commands,
    sed_commands,
    shell_strings,
)
from frontdesk.guard.shelltext import found_by_find
from frontdesk.guard.words import SHELLS, Invocation, Word
from frontdesk.guard.writers import file_writes

__all__ = ["unwrap", "shell_strings", "positional", "VAR_RE"]

_INTERPRETERS = {
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "Rscript",
    "php",
    "lua",
    "julia",
    "deno",
    "bun",
    "R",
}
_DB_CLIENTS = {"psql", "mysql", "mariadb", "sqlite3", "duckdb", "clickhouse-client", "cqlsh", "mongosh", "sqlcmd"}
_CODE_FLAGS = {"-c", "-e", "-E", "--eval", "-r", "--command", "-p"}
_SUDO_ARG_FLAGS = {
    "-u",
    "-g",
    "-h",
    "-p",
    "-C",
    "-D",
    "-r",
    "-t",
    "-U",
    "-T",
    "--user",
    "--group",
    "--host",
    "--prompt",
    "--chdir",
    "--role",
    "--type",
    "--other-user",
    "--close-from",
}
# Programs whose reading lives in mounts.py and optcode.py, imported on first use (the hook checks one command
# per process; tests keep these sets equal to the modules' tables).
CONTAINER_PROGS = frozenset(
    "docker podman nerdctl udocker buildah apptainer singularity bwrap systemd-nspawn chroot arch-chroot enroot "
    "ch-run proot".split()
)
OPTION_CODE_PROGS = frozenset("tar rsync zip make gmake ssh scp sftp".split())
CLIENT_PROGS = frozenset("emacs emacsclient sqlite3 duckdb psql mysql mariadb less man".split())
_GIT_RUNS = tuple(
    "-x --exec --extcmd -u --upload-pack --receive-pack --sendmail-cmd --tree-filter --index-filter --msg-filter "
    "--commit-filter --env-filter --parent-filter --tag-name-filter".split()
)
VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- wrappers ---------------------------------------------------------------------------------------
def _inner(inv: Invocation, words: list[Word], tag: str, **extra: Any) -> Invocation:
    """A command `inv` runs: `words` under `inv`'s environment, redirections and pipeline, `tag` added to its via."""
    return Invocation(
        list(words),
        env=dict(extra.pop("env", inv.env)),
        redirects=inv.redirects,
        upstream=inv.upstream,
        via=inv.via + [tag],
        cwd=extra.pop("cwd", inv.cwd),
        stdin_from=inv.stdin_from,
        stdin_text=extra.pop("stdin_text", inv.stdin_text),
        stdin_partial=extra.pop("stdin_partial", inv.stdin_partial),
        stdin_lists=extra.pop("stdin_lists", inv.stdin_lists),
        **extra,
    )


def _code(inv: Invocation, text: str, tag: str) -> Invocation:
    """Code `inv` runs (no argv: parsed as shell), with no stdin of its own."""
    return _inner(inv, [], tag, inline_code=text, stdin_text=None, stdin_partial=False)


def unwrap(inv: Invocation) -> Iterator[Invocation]:
    """The commands `inv` runs inside itself: an argv, or code (`inline_code` with no argv) to parse."""
    prog = inv.program
    args = inv.args
    yield from file_writes(inv)  # tee F, sed -i F, dd of=F: the redirection each write amounts to
    yield from found_by_find(inv)  # rm -rf $(find ~ -name X): find ~ -name X -exec rm -rf {} +
    inner, code = partial(_inner, inv), partial(_code, inv)
    if prog in OPTION_CODE_PROGS:  # tar --to-command=CMD, rsync -e CMD, ssh -o ProxyCommand=CMD, make --eval
        from frontdesk.guard.optcode import option_code

        yield from option_code(inv, code)
    if prog == "git" and any(w.text in ("bisect", "submodule") or w.text.startswith(_GIT_RUNS) for w in args):
        from frontdesk.guard.optcode import git_runs

        yield from git_runs(inv, inner, code)  # git bisect run CMD, rebase -x CODE, submodule foreach CODE
    if prog in ("sudo", "doas", "run0", "pkexec", "env"):
        yield from _sudo_env(inv, inner)
    elif prog in SHELLS:
        yield from _shell(inv, code)
    elif prog == "eval":
        yield code(" ".join(_code_text(w) for w in args), "eval")
    elif prog in ("su", "script", "sg"):
        yield from _dash_c(prog, args, code, inv.stdin_text)
    elif prog in LATER:
        yield from later_commands(inv, code)
    elif prog == "xargs":
        yield from xargs_commands(inv, inner, code)
    elif prog == "parallel":
        yield from parallel_commands(inv, inner, code)
    elif prog == "find":
        yield from _find_exec(inv, inner)
    elif prog == "sbatch":
        yield from (code(text, "sbatch --wrap") for text in _sbatch_wrap(args))
    elif prog in ("awk", "gawk", "mawk", "nawk", "busybox awk"):
        yield from awk_commands(inv, code)
    elif prog in ("sed", "gsed"):
        yield from sed_commands(inv, code)
    elif prog in _INTERPRETERS or re.match(r"^python\d(\.\d+)?$", prog):
        yield from _interpreter(inv, inner, code)
    elif prog in CLIENT_PROGS:
        from frontdesk.guard.optcode import client_code

        yield from client_code(inv, code)
    elif prog in _DB_CLIENTS and inv.stdin_text is not None:
        inv.inline_code = inv.stdin_text  # SQL on stdin: matched by code_regex rules
    elif prog in CONTAINER_PROGS and (box := _contained(prog, args, inv.cwd)) is not None:
        yield from _in_container(prog, box, inner, inv.stdin_text)
    elif prog in LOOK_THROUGH:
        yield from _looked_through(inv, inner, code)
    elif prog == "cmake" and (removes := _cmake_rm(inv)) is not None:
        yield inner(removes, "cmake -E")
    elif (guessed := guess_inner(prog, args)) is not None:
        yield inner(guessed, f"{prog} {GUESSED}")


def _looked_through(inv: Invocation, inner: Any, code: Any) -> Iterator[Invocation]:
    """A row of the look-through table: the inner argv, and shell code in option values or the rest."""
    prog = inv.program
    if prog in ("gdb", "gdb-multiarch", "cuda-gdb"):
        yield from gdb_commands(inv, code)
    words, codes = command_after(inv.args, LOOK_THROUGH[prog])
    mounts = _pyxis(inv.args, inv.cwd) if prog == "srun" else []
    if mounts:  # srun --container-mounts=~:/h rm -rf /h: the step acts on the host path
        from frontdesk.guard.mounts import map_text

        words = [w if (t := map_text(w.text, mounts)) == w.text else replace(w, text=t) for w in words]
        codes = [map_text(c, mounts) for c in codes]
    if prog == "ssh" and not words and not codes and inv.stdin_text is not None:
        codes = [inv.stdin_text]  # ssh HOST <<< CODE: the remote shell reads its code on stdin
    for text in codes:
        yield code(text, prog)
    if words:
        yield inner(words, prog)


def _contained(prog: str, args: list[Word], cwd: str | None) -> Any:
    from frontdesk.guard.mounts import contained

    return contained(prog, args, cwd)


def _cmake_rm(inv: Invocation) -> list[Word] | None:
    from frontdesk.guard.optcode import cmake_rm

    return cmake_rm(inv)


def _in_container(prog: str, box: Any, inner: Any, inv_stdin: str | None) -> Iterator[Invocation]:
    """`docker run -v ~:/h IMG rm -rf /h`: the inner command with each mount target put back to its host path."""
    from frontdesk.guard.mounts import map_text

    if box.shell and inv_stdin is not None:  # apptainer shell IMG <<< CODE
        yield inner([], f"{prog} shell", inline_code=map_text(inv_stdin, box.mounts), stdin_text=None)
    if not box.argv:
        return
    words = [w if (t := map_text(w.text, box.mounts)) == w.text else replace(w, text=t) for w in box.argv]
    workdir = map_text(box.workdir, box.mounts) if box.workdir else None
    extra = {"cwd": workdir} if workdir and workdir != box.workdir else {}
    yield inner(words, prog, **extra)  # the tag a wrapper gets: a pipeline stage is its inner command


def _pyxis(args: list[Word], cwd: str | None) -> list[tuple[str, str]]:
    if not any(w.text.startswith("--container-mounts") for w in args):
        return []
    from frontdesk.guard.mounts import pyxis_mounts

    return pyxis_mounts(args, cwd)


def _sbatch_wrap(args: list[Word]) -> Iterator[str]:
    """`sbatch --wrap=CODE`, `sbatch --wrap CODE`."""
    for i, w in enumerate(args):
        if w.text.startswith("--wrap="):
            yield w.text[len("--wrap=") :]
        elif w.text == "--wrap" and i + 1 < len(args):
            yield args[i + 1].text


def _dash_c(prog: str, args: list[Word], code: Any, stdin_text: str | None) -> Iterator[Invocation]:
    """`su -c CODE`, `script -qc CODE` (c ends a flag group), `--command CODE`, `--command=CODE`; without one,
    the shell they start reads its code on stdin (`su <<< CODE`, `script -q /dev/null <<< CODE`)."""
    found = False
    for i, w in enumerate(args):
        grouped = re.fullmatch(r"-[A-Za-z]*c", w.text) is not None
        if (w.text == "--command" or grouped) and i + 1 < len(args):
            found = True
            yield code(args[i + 1].text, f"{prog} -c")
        elif w.text.startswith("--command="):
            found = True
            yield code(w.text.partition("=")[2], f"{prog} -c")
    if not found and stdin_text is not None:
        yield code(stdin_text, f"{prog} <stdin")


def _sudo_env(inv: Invocation, inner: Any) -> Iterator[Invocation]:
    prog = inv.program
    args = inv.args
    env: dict[str, str] = dict(inv.env)
    value_flags = _SUDO_ARG_FLAGS if prog != "env" else {"-u", "--unset", "-C", "--chdir", "-P"}
    options, cwd = True, inv.cwd
    i = 0
    while i < len(args):
        t = args[i].text
        if prog == "env" and (t in ("-S", "--split-string") or t.startswith(("--split-string=", "-S"))):
            if t in ("-S", "--split-string"):
                text, rest = (args[i + 1].text if i + 1 < len(args) else ""), args[i + 2 :]
            else:  # --split-string=CODE, -SCODE
                text, rest = (t.partition("=")[2] if t.startswith("--") else t[2:]), args[i + 1 :]
            yield inner([], "env -S", inline_code=" ".join([text] + [w.text for w in rest]))
            return
        if t == "--" and options:
            options = False
            i += 1
        elif t.startswith("-") and options:
            cwd = _chdir(prog, [w.text for w in args[i : i + 2]], cwd)  # env -C DIR, sudo -D DIR: runs there
            i += opt_width(t, value_flags)  # -u bob, -iu bob, -ubob
        elif "=" in t and VAR_RE.match(t.split("=", 1)[0]):
            k, v = t.split("=", 1)
            env[k] = v
            i += 1
        else:
            break
    if i < len(args):
        yield inner(args[i:], prog, env=env, cwd=cwd)
    elif prog == "env" and env != inv.env:
        yield inner([], "env", env=env)
    elif inv.stdin_text is not None and any(
        re.fullmatch(r"-[A-Za-z]*[si][A-Za-z]*|--shell|--login", w.text) for w in args
    ):
        # sudo -s / sudo -i with no command: the shell it starts reads its code on stdin
        yield inner([], f"{prog} -s", inline_code=inv.stdin_text, stdin_text=None, stdin_partial=False)


def _chdir(prog: str, words: list[str], cwd: str | None) -> str | None:
    """The directory `env -C DIR` / `--chdir=DIR` (sudo: `-D DIR`) runs its command in, else `cwd`."""
    short = "-C" if prog == "env" else "-D"
    t, value = words[0], words[1] if len(words) > 1 else ""
    got = value if t in (short, "--chdir") else t.partition("=")[2] if t.startswith("--chdir=") else None
    got = t[2:] if got is None and t.startswith(short) and len(t) > 2 else got
    return posixpath.normpath(posixpath.join(cwd or "/", got)) if got else cwd


def _shell(inv: Invocation, code: Any) -> Iterator[Invocation]:
    """`bash -c CODE`, and `bash`, `bash -s`, `bash -` reading code from a heredoc, here-string or pipe."""
    prog = inv.program
    for i, w in enumerate(inv.args):
        t = w.text
        if t.startswith("-") and not t.startswith("--") and "c" in t[1:]:
            if i + 1 < len(inv.args):
                rest = inv.args[i + 2 :]  # $0 $1 ...: none given is $0 = the shell, the rest empty
                values = [a.text for a in rest] or [prog]
                text = positional(_code_text(inv.args[i + 1]), values, not any(a.dynamic for a in rest))
                yield code(text, prog + " -c")
            return
        if t == "-" or t == "-s" or (t.startswith("-") and "s" in t[1:] and not t.startswith("--")):
            break
        if not t.startswith("-") and not t.startswith("+"):
            return  # a script file: the checker reads it
    if inv.stdin_text is not None:
        yield code(inv.stdin_text, prog + " <stdin")


def _interpreter(inv: Invocation, inner: Any, code: Any) -> Iterator[Invocation]:
    prog = inv.program
    args = inv.args
    for i, w in enumerate(args):
        t = w.text
        if t == "-m" and i + 1 < len(args):
            mod = args[i + 1].text
            yield inner([Word(mod, mod)] + args[i + 2 :], f"{prog} -m", module=mod)
            return
        is_python = prog.startswith("python")
        if i + 1 < len(args) and (t == "-c" if is_python else t in _CODE_FLAGS or t == "eval" and i == 0):
            inv.inline_code = args[i + 1].text
            break
        if t == "-":
            inv.inline_code = inv.stdin_text
            break
        if not t.startswith("-"):
            return
    else:
        inv.inline_code = inv.stdin_text
    for text in shell_strings(inv.inline_code or ""):
        yield code(text, f"{prog} shell-out")


def _find_exec(inv: Invocation, inner: Any) -> Iterator[Invocation]:
    args = inv.args
    roots = [w for w in args if not w.is_flag and w.text not in ("!", "(", ")")][:1]
    i = 0
    while i < len(args):
        t = args[i].text
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            words: list[Word] = []
            while j < len(args) and args[j].text not in (";", "+", "\\;"):
                w = args[j]
                if w.text == "{}" and roots:
                    w = Word(
                        roots[0].text.rstrip("/") + "/{}",
                        w.raw,
                        roots[0].unset_vars,
                        roots[0].leading_unset,
                        roots[0].dynamic,
                    )
                words.append(w)
                j += 1
            if words:
                yield inner(words, "find " + t)
            i = j + 1
        else:
            i += 1


# -- text helpers ------------------------------------------------------------------------------------
_POSITIONAL = re.compile(r'"\$(?:\{)?([0-9@*])\}?"|\$(?:\{)?([0-9@*])\}?')
_PLAIN_VALUE = re.compile(r"^[\w./~@%+=:,-]+$")


def positional(code: str, values: list[str], complete: bool = False) -> str:
    """`bash -c 'rm -rf "$1"' _ DIR`: the words after the code are $0, $1, ...; put them in (plain ones only).
    `complete`: these are all the words there are, so a `$N` past them is empty (`f() { rm -rf "$1/"; }; f`,
    `bash -c 'rm -rf "$1/"'`) and reads as an unset variable."""
    if not values or "$" not in code:
        return code

    def put(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        picked = values[1:] if name in "@*" else values[int(name) : int(name) + 1]
        if not picked and complete and name.isdigit():
            return f'"${{NO_ARG_{name}}}"' if m.group(1) else f"${{NO_ARG_{name}}}"  # unset: empty
        if picked and m.group(1):  # "$1", "$@": each value one word, whatever it holds
            return shlex.quote(" ".join(picked)) if name == "*" else " ".join(shlex.quote(v) for v in picked)
        if not picked or not all(_PLAIN_VALUE.match(v) for v in picked):
            return m.group(0)
        return " ".join(picked)

    # single-quoted text is not expanded (`bash -c "sh -c 'rm -rf \$0' ~"`: that $0 is the inner shell's)
    return "".join(p if p.startswith("'") else _POSITIONAL.sub(put, p) for p in _SPANS.findall(code))


_SPANS = re.compile(r"""'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^'"\\]+|.""", re.DOTALL)


def _code_text(word: Word) -> str:
    """Code handed to an inner shell; keeps `$VAR` for unset variables so the inner parse sees them."""
    if word.unset_vars and word.raw[:1] == '"' and word.raw[-1:] == '"':
        return word.raw[1:-1]
    return word.text
