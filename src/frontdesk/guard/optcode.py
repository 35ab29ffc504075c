"""Code given in an option, or in a client's own commands, that a shell runs: emacs --eval Lisp, sqlite3
`.shell`, psql `\\!`, mysql `system`, less `+!CMD`, man -P, and options whose value is a command line
(`tar --to-command`, `tar -I`, `--checkpoint-action=exec=`, `rsync -e`, `ssh -o ProxyCommand=`, `zip -TT`,
`make --eval`), plus `cmake -E rm|remove|remove_directory`, which is rm. Pure functions of one invocation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from frontdesk.guard.shellout import make_recipes, shell_strings
from frontdesk.guard.words import Invocation, Word

__all__ = ["OPTION_CODE", "CLIENTS", "client_code", "option_code", "cmake_rm", "git_runs"]

Code = Callable[[str, str], Invocation]
_EX_BANG = r"^\s*:?\s*!"  # patterns compile on first use (re's cache): the hook's cold start


def _emacs(inv: Invocation, code: Code) -> Iterator[Invocation]:
    """`emacs --batch --eval '(shell-command "CMD")'`, `(delete-directory "~" t)`: Lisp run at start."""
    args = inv.args
    for i, w in enumerate(args):
        t = w.text
        if t in ("--eval", "-eval", "-e") and i + 1 < len(args):
            lisp = args[i + 1].text
        elif t.startswith("--eval="):
            lisp = t.partition("=")[2]
        else:
            continue
        inv.inline_code = lisp
        for text in shell_strings(lisp):
            yield code(text, f"{inv.program} --eval")


# Database and pager clients whose own commands run a shell: sqlite3 `.shell CMD` / `.system CMD`, psql and
# mysql `\! CMD` / `system CMD`, less `!CMD` (given as +CMD), man -P / --pager (the pager is a command).
_CLIENT_ESCAPES = frozenset(("sqlite3", "duckdb", "psql", "mysql", "mariadb", "less", "man"))
_ESCAPE = r"(?m)^\s*(?:\.(?:shell|system)\s+|\\!\s*|system\s+|!)(?P<cmd>.+)$"


def _client_escapes(inv: Invocation, code: Code) -> Iterator[Invocation]:
    prog, args = inv.program, inv.args
    texts: list[str] = []
    for i, w in enumerate(args):
        t = w.text
        if prog == "man":
            if t in ("-P", "--pager") and i + 1 < len(args):
                yield code(args[i + 1].text, "man -P")
            elif t.startswith("--pager="):
                yield code(t.partition("=")[2], "man -P")
        elif prog == "less":
            if t.startswith("+") and re.match(_EX_BANG, t[1:]):
                yield code(re.sub(_EX_BANG, "", t[1:]).rstrip("\n"), "less !")
        elif t in ("-c", "--command", "-e", "--execute", "-cmd") and i + 1 < len(args):
            texts.append(args[i + 1].text)
        elif t.startswith(("--command=", "--execute=")):
            texts.append(t.partition("=")[2])
        elif prog in ("sqlite3", "duckdb") and not w.is_flag and t.lstrip().startswith("."):
            texts.append(t)
    if prog not in ("man", "less") and inv.stdin_text is not None:
        inv.inline_code = inv.stdin_text  # SQL on stdin: matched by code_regex rules
        texts.append(inv.stdin_text)
    for text in texts:
        for m in re.finditer(_ESCAPE, text):
            cmd = m.group("cmd").strip()
            if prog in ("sqlite3", "duckdb") and not m.group(0).lstrip().startswith("."):
                continue  # only dot-commands escape to the shell there
            if prog in ("psql",) and not m.group(0).lstrip().startswith("\\"):
                continue
            yield code(cmd, f"{prog} shell escape")


CLIENTS = frozenset(("emacs", "emacsclient")) | _CLIENT_ESCAPES


def client_code(inv: Invocation, code: Code) -> Iterator[Invocation]:
    """Shell commands an editor, database client or pager runs from its options or its input."""
    if inv.program in ("emacs", "emacsclient"):
        yield from _emacs(inv, code)
    else:
        yield from _client_escapes(inv, code)


# Options whose value is a command line the program runs (each spelling: `--opt=V`, `--opt V`, `-oV`, `-o V`).
OPTION_CODE: dict[str, frozenset[str]] = {
    "tar": frozenset(("--to-command", "-I", "--use-compress-program", "--info-script", "-F", "--new-volume-script",
                      "--rsh-command")),
    "rsync": frozenset(("-e", "--rsh", "--rsync-path")),
    "zip": frozenset(("-TT", "--unzip-command")),
    "make": frozenset(("--eval",)),
    "gmake": frozenset(("--eval",)),
    "ssh": frozenset(),
    "scp": frozenset(("-S",)),
    "sftp": frozenset(("-S",)),
}  # fmt: skip
# ssh -o settings whose value is a command ssh runs on this machine.
_SSH_CODE = r"(?i)^(ProxyCommand|LocalCommand|KnownHostsCommand)[= ]\s*(.+)$"


def option_code(inv: Invocation, code: Code) -> Iterator[Invocation]:
    """The command lines `inv` takes in its options, each read as code."""
    prog, args = inv.program, inv.args
    names = OPTION_CODE.get(prog)
    if names is None:
        return
    for i, w in enumerate(args):
        t = w.text
        nxt = args[i + 1].text if i + 1 < len(args) else None
        value: str | None = None
        if t in names and nxt is not None:
            value = nxt
        elif t.startswith("--") and t.partition("=")[0] in names and "=" in t:
            value = t.partition("=")[2]
        elif t[:2] in names and len(t) > 2 and not t.startswith("--") and t[:2] != t:
            value = t[2:] if prog not in ("zip",) else None
        elif prog == "tar" and t.startswith("--checkpoint-action=exec="):
            value = t.partition("exec=")[2]
        elif prog in ("ssh", "scp", "sftp") and (t == "-o" and nxt is not None or t.startswith("-o") and len(t) > 2):
            m = re.match(_SSH_CODE, nxt if t == "-o" and nxt is not None else t[2:])
            value = m.group(2) if m else None
        if value:
            text = make_recipes(value.replace("; ", "\n\t", 1) if ":" in value else value) if "make" in prog else value
            yield code(text, f"{prog} {t.partition('=')[0][:20]}")


_CMAKE_RM = {"rm": None, "remove": "-f", "remove_directory": "-rf"}


def cmake_rm(inv: Invocation) -> list[Word] | None:
    """`cmake -E rm -rf D`, `cmake -E remove_directory D`, `cmake -E remove -f F`: the rm they are."""
    args = inv.args
    if inv.program != "cmake" or len(args) < 3 or args[0].text != "-E" or args[1].text not in _CMAKE_RM:
        return None
    flag = _CMAKE_RM[args[1].text]
    rest = [w for w in args[2:] if not (flag == "-f" and w.text == "-f")]
    return [Word("rm", "rm"), *([Word(flag, flag)] if flag else []), *rest]


_GIT_GLOBAL_VALUES = frozenset(("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"))
_GIT_CODE_OPTS = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "clone": ("-u", "--upload-pack"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "push": ("--receive-pack",),
    "send-email": ("--sendmail-cmd",),
    "filter-branch": ("--tree-filter", "--index-filter", "--msg-filter", "--commit-filter", "--env-filter",
                      "--parent-filter", "--tag-name-filter"),
}  # fmt: skip


def git_runs(inv: Invocation, inner: Callable[..., Invocation], code: Code) -> Iterator[Invocation]:
    """Commands git subcommands run: `bisect run CMD...`, `submodule foreach CODE`, `rebase -x CODE`,
    `difftool -x CMD`, `clone -u CMD`, `filter-branch --tree-filter CODE`."""
    args = inv.args
    i = 0
    while i < len(args) and args[i].is_flag:
        i += 2 if args[i].text in _GIT_GLOBAL_VALUES else 1
    if i >= len(args):
        return
    sub, rest = args[i].text, args[i + 1 :]
    if sub == "bisect" and rest[:1] and rest[0].text == "run" and len(rest) > 1:
        yield inner(rest[1:], "git bisect run")
    elif sub == "submodule":
        words = [w.text for w in rest]
        if "foreach" in words:
            after = [t for t in words[words.index("foreach") + 1 :] if t not in ("--recursive", "-q", "--quiet")]
            if after:
                yield code(" ".join(after), "git submodule foreach")
    for k, w in enumerate(rest):
        for name in _GIT_CODE_OPTS.get(sub, ()):
            if w.text == name and k + 1 < len(rest):
                yield code(rest[k + 1].text, f"git {sub} {name}")
            elif name.startswith("--") and w.text.startswith(name + "="):
                yield code(w.text.partition("=")[2], f"git {sub} {name}")
