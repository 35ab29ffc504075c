"""Look through wrappers: sudo, env, nice, timeout, srun, xargs, find -exec, bash -c, eval, python -m ..."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from frontdesk.guard.words import Invocation, Word

__all__ = ["unwrap", "VAR_RE"]

_SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "ash", "busybox"}
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
}
_CODE_FLAGS = {"-c", "-e", "-E", "--eval", "-r", "--command", "-p"}
_PLAIN_WRAPPERS = {
    "nohup",
    "time",
    "exec",
    "command",
    "builtin",
    "stdbuf",
    "ionice",
    "chrt",
    "nice",
    "taskset",
    "strace",
    "ltrace",
    "xvfb-run",
    "unbuffer",
    "caffeinate",
    "setsid",
    "numactl",
    "flock",
    "doas",
    "proxychains",
    "proxychains4",
    "torsocks",
    "catchsegv",
}
_WRAPPER_ARG_FLAGS = {
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "taskset": {"-p", "-c"},
    "stdbuf": {"-i", "-o", "-e"},
    "flock": {"-w", "-E"},
    "numactl": set(),
    "strace": {"-o", "-e", "-p", "-s", "-u"},
    "doas": {"-u", "-C"},
}
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
_SRUN_ARG_FLAGS = set("pNnctJAGwxoeqCmLdDBIkKMSTW")
_XARGS_ARG_FLAGS = {
    "-I",
    "-i",
    "-n",
    "-P",
    "-L",
    "-l",
    "-d",
    "-E",
    "-e",
    "-s",
    "-a",
    "--max-args",
    "--max-procs",
    "--delimiter",
    "--arg-file",
    "--replace",
    "--max-lines",
}
VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- wrappers ---------------------------------------------------------------------------------------
def unwrap(inv: Invocation) -> Iterator[Invocation]:
    prog = inv.program
    args = inv.args

    def inner(words: list[Word], tag: str, **extra: Any) -> Invocation:
        return Invocation(
            list(words),
            env=dict(extra.pop("env", inv.env)),
            redirects=inv.redirects,
            upstream=inv.upstream,
            via=inv.via + [tag],
            cwd=inv.cwd,
            stdin_from=inv.stdin_from,
            **extra,
        )

    if prog in ("sudo", "doas", "run0", "pkexec"):
        i = 0
        env: dict[str, str] = dict(inv.env)
        while i < len(args):
            t = args[i].text
            if t in _SUDO_ARG_FLAGS:
                i += 2
            elif t.startswith("-"):
                i += 1
            elif "=" in t and VAR_RE.match(t.split("=", 1)[0]):
                k, v = t.split("=", 1)
                env[k] = v
                i += 1
            else:
                break
        if i < len(args):
            yield inner(args[i:], prog, env=env)
    elif prog == "env":
        env = dict(inv.env)
        i = 0
        while i < len(args):
            t = args[i].text
            if t in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                if t in ("-S", "--split-string") and i + 1 < len(args):
                    yield inner([], "env -S", inline_code=args[i + 1].text)
                i += 2
            elif t.startswith("-"):
                i += 1
            elif "=" in t and VAR_RE.match(t.split("=", 1)[0]):
                k, v = t.split("=", 1)
                env[k] = v
                i += 1
            else:
                break
        if i < len(args):
            yield inner(args[i:], "env", env=env)
        elif env != inv.env:
            yield inner([], "env", env=env)
    elif prog in _PLAIN_WRAPPERS or prog == "timeout":
        flags = _WRAPPER_ARG_FLAGS.get(prog, set())
        i = 0
        while i < len(args) and args[i].text.startswith("-"):
            i += 2 if args[i].text in flags else 1
        if prog == "timeout" and i < len(args):
            i += 1  # the duration
        if prog == "taskset" and i < len(args) and not args[0].text.startswith("-"):
            i += 1  # the mask
        if i < len(args):
            yield inner(args[i:], prog)
    elif prog in ("srun", "mpirun", "mpiexec", "salloc"):
        i = 0
        while i < len(args):
            t = args[i].text
            if t.startswith("--"):
                i += 1
            elif t.startswith("-") and len(t) == 2 and (t[1] in _SRUN_ARG_FLAGS or prog != "srun"):
                i += 2
            elif t.startswith("-"):
                i += 1
            else:
                break
        if i < len(args):
            yield inner(args[i:], prog)
    elif prog in _SHELLS:
        for i, w in enumerate(args):
            t = w.text
            if t.startswith("-") and not t.startswith("--") and "c" in t[1:]:
                if i + 1 < len(args):
                    yield inner([], prog + " -c", inline_code=_code_text(args[i + 1]))
                return
            if not t.startswith("-") and not t.startswith("+"):
                return
    elif prog == "eval":
        yield inner([], "eval", inline_code=" ".join(_code_text(w) for w in args))
    elif prog == "watch":
        i = 0
        while i < len(args) and args[i].text.startswith("-"):
            i += 2 if args[i].text in ("-n", "--interval", "-d") else 1
        if i < len(args):
            yield inner([], "watch", inline_code=" ".join(w.text for w in args[i:]))
    elif prog == "su":
        for i, w in enumerate(args):
            if w.text in ("-c", "--command") and i + 1 < len(args):
                yield inner([], "su -c", inline_code=args[i + 1].text)
    elif prog == "xargs":
        i = 0
        while i < len(args) and args[i].text.startswith("-"):
            t = args[i].text
            i += 2 if t in _XARGS_ARG_FLAGS else 1
        words = args[i:] or [Word("echo", "echo")]
        yield inner(words + [Word("", "{xargs}", dynamic=True)], "xargs")
    elif prog == "find":
        yield from _find_exec(inv, inner)
    elif prog in _INTERPRETERS or re.match(r"^python\d(\.\d+)?$", prog):
        for i, w in enumerate(args):
            t = w.text
            if t == "-m" and i + 1 < len(args):
                mod = args[i + 1].text
                yield inner([Word(mod, mod)] + args[i + 2 :], f"{prog} -m", module=mod)
                return
            is_python = prog.startswith("python")
            if i + 1 < len(args) and (t == "-c" if is_python else t in _CODE_FLAGS):
                inv.inline_code = args[i + 1].text
                return
            if not t.startswith("-"):
                return


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
def _code_text(word: Word) -> str:
    """Code handed to an inner shell; keeps `$VAR` for unset variables so the inner parse sees them."""
    if word.unset_vars and word.raw[:1] == '"' and word.raw[-1:] == '"':
        return word.raw[1:-1]
    return word.text
