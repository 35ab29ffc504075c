"""Turn a shell command into the simple commands it would run, with the tree-sitter bash grammar.

Each simple command becomes an `Invocation`: its words expanded against the current environment (an
unset or empty variable is known as such), its prefix assignments, redirections, the programs upstream in
its pipeline, and the wrappers it sits under. Wrappers are looked through: `sudo`, `env`, `nice`, `nohup`,
`timeout`, `srun`, `xargs`, `find -exec`, `bash -c`, `sh -c`, `eval`, `watch`, `su -c`, `python -m`,
command and process substitutions. Nothing here runs anything or reads files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

__all__ = ["DYNAMIC", "Word", "Invocation", "Parsed", "parse", "basename"]

_MAX_DEPTH = 6
DYNAMIC = "\x00dyn"  # the value of a variable that is set but unknown here (a loop variable, `read`)


@dataclass
class Word:
    """One shell word: `text` as the shell would expand it (best effort), `raw` as written."""

    text: str
    raw: str
    unset_vars: tuple[str, ...] = ()
    leading_unset: bool = False
    dynamic: bool = False
    subst_programs: tuple[str, ...] = ()

    @property
    def is_flag(self) -> bool:
        """Whether this word looks like an option."""
        return self.text.startswith("-") and len(self.text) > 1


@dataclass
class Invocation:
    """One simple command the shell line would run."""

    argv: list[Word]
    env: dict[str, str] = field(default_factory=dict)
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    upstream: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)
    cwd: str | None = None
    inline_code: str | None = None
    module: str | None = None
    stdin_from: list[str] = field(default_factory=list)

    @cached_property
    def program(self) -> str:
        """The basename of argv[0] ('' for a bare assignment)."""
        return basename(self.argv[0].text) if self.argv else ""

    @property
    def args(self) -> list[Word]:
        """The words after the program."""
        return self.argv[1:]


@dataclass
class Parsed:
    """Everything one command line would run, plus whether the parser had to guess."""

    invocations: list[Invocation]
    error: bool
    functions: dict[str, str] = field(default_factory=dict)


def basename(path: str) -> str:
    """The program name of an argv[0] (`/usr/bin/rm` → `rm`, `\\rm` → `rm`)."""
    return path.rsplit("/", 1)[-1].lstrip("\\")


_parser: Any = None


def _get_parser() -> Any:
    global _parser
    if _parser is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        _parser = Parser(Language(tree_sitter_bash.language()))
    return _parser


def parse(
    command: str, env: Mapping[str, str] | None = None, cwd: str | None = None, env_complete: bool = True
) -> Parsed:
    """Parse `command` into invocations, expanding variables against `env`.

    With `env=None` nothing is known; with `env_complete=False` a variable missing from `env` is unknown
    (not unset), while one the command itself empties (`X=; rm -rf $X/`) is still known to be empty.
    """
    walker = _Walker(dict(env) if env is not None else None, cwd, env_complete)
    error = walker.run(command, 0)
    return Parsed(walker.out, error, walker.functions)


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
_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Text bash splits on blanks alone: no quotes, expansions, globs, operators, comments or tildes.
_SIMPLE = re.compile(r"[A-Za-z0-9_@%+=:,./ \t-]*")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RESERVED = frozenset(
    "if then else elif fi case esac for select while until do done in function time coproc".split()
)
_DECLARE = frozenset(("export", "declare", "typeset", "local", "readonly"))


class _Walker:
    def __init__(self, env: dict[str, str] | None, cwd: str | None, env_complete: bool = True) -> None:
        self.env = env
        self.env_complete = env_complete
        self.src = b""
        self.cwd = cwd
        self.out: list[Invocation] = []
        self.functions: dict[str, str] = {}

    # -- entry -------------------------------------------------------------------------------------
    def run(self, source: str, depth: int, via: list[str] | None = None) -> bool:
        if depth > _MAX_DEPTH:
            return True
        if _SIMPLE.fullmatch(source) and not _RESERVED.intersection(source.split()):
            self._simple(source, depth, via or [])
            return False
        data = source.encode("utf-8", "surrogateescape")
        # tree-sitter-bash 0.25 can crash (SIGSEGV) on some non-ASCII code points (e.g. `{` + U+CF166), so the
        # parser sees every non-ASCII byte as `%` (a plain word character: same structure, same offsets) and
        # words are read back from the real bytes.
        safe = data if source.isascii() else bytes(b if b < 0x80 else 0x25 for b in data)
        saved, self.src = self.src, data
        try:
            root = _get_parser().parse(safe).root_node
            self._stmt(root, depth, via or [], [])
            return bool(root.has_error)
        finally:
            self.src = saved

    def _simple(self, source: str, depth: int, via: list[str]) -> None:
        """A command with no quoting, expansion or operators: bash would split it on blanks, so do we."""
        words = source.split()
        env: dict[str, str] = {}
        while words and _ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if not words:
            for name, value in env.items():
                self._set(name, value)
                self.out.append(Invocation([], env={name: value}, via=list(via), cwd=self.cwd))
            return
        if words[0] in _DECLARE:
            for word in words[1:]:
                if _ASSIGNMENT.match(word):
                    name, _, value = word.partition("=")
                    self._set(name, value)
                    env[name] = value
        argv = [Word(w, w) for w in words]
        self._emit(Invocation(argv, env=env, via=list(via), cwd=self.cwd), depth)

    def _t(self, node: Any) -> str:
        """The source text of a node, from the real bytes."""
        if node is None:
            return ""
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    # -- statements --------------------------------------------------------------------------------
    def _stmt(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, depth, via, [], redirects)
        elif kind == "pipeline":
            upstream: list[str] = []
            for child in node.named_children:
                before = len(self.out)
                self._stmt(child, depth, via, redirects)
                for inv in self.out[before:]:
                    if not inv.upstream:
                        inv.upstream = list(upstream)
                upstream.extend(inv.program for inv in self.out[before:] if not inv.via or inv.via == via)
        elif kind == "redirected_statement":
            reds = list(redirects)
            body = node.child_by_field_name("body")
            for child in node.named_children:
                if body is not None and child.id == body.id:
                    continue
                reds.extend(self._redirect(child, depth, via))
            if body is not None:
                self._stmt(body, depth, via, reds)
            elif reds:
                self.out.append(Invocation([], redirects=reds, via=list(via), cwd=self.cwd))
        elif kind == "unset_command":
            words = [Word("unset", "unset")] + [Word(self._t(c), self._t(c)) for c in node.named_children]
            self.out.append(Invocation(words, via=list(via), cwd=self.cwd))
        elif kind == "declaration_command":
            self._declaration(node, depth, via)
        elif kind == "variable_assignment":
            name, value = self._assignment(node, depth, via)
            self._set(name, value)
            self.out.append(Invocation([], env={name: value.text}, via=list(via), cwd=self.cwd))
        elif kind == "variable_assignments":
            for child in node.named_children:
                self._stmt(child, depth, via, redirects)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name is not None and body is not None:
                self.functions[self._t(name)] = self._t(body)
                self._stmt(body, depth, via + [f"function {self._t(name)}"], redirects)
        elif kind in ("for_statement", "select_statement"):
            var = node.child_by_field_name("variable")
            for child in node.named_children:
                if child.type in (
                    "word",
                    "string",
                    "concatenation",
                    "simple_expansion",
                    "expansion",
                    "raw_string",
                    "command_substitution",
                ):
                    self._word(child, depth, via)  # runs substitutions in the list
            if var is not None:
                self._set(self._t(var), DYNAMIC)
            body = node.child_by_field_name("body")
            if body is not None:
                self._stmt(body, depth, via, redirects)
        elif kind in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                self._stmt(child, depth, via, [])
        elif kind == "heredoc_body" or kind == "comment":
            return
        else:
            for child in node.named_children:
                self._stmt(child, depth, via, redirects)

    def _redirect(self, node: Any, depth: int, via: list[str]) -> list[tuple[str, Word]]:
        op = ""
        target: Word | None = None
        for child in node.children:
            if not child.is_named and child.type not in ("(", ")"):
                op = child.type
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end", "file_descriptor"):
                continue
            elif child.is_named:
                target = self._word(child, depth, via)
        return [(op, target)] if target is not None else []

    def _declaration(self, node: Any, depth: int, via: list[str]) -> None:
        env: dict[str, str] = {}
        words: list[Word] = []
        for child in node.children:
            if child.type == "variable_assignment":
                name, value = self._assignment(child, depth, via)
                self._set(name, value)
                env[name] = value.text
            elif child.is_named:
                words.append(self._word(child, depth, via))
            else:
                words.append(Word(child.type, child.type))
        self.out.append(Invocation(words, env=env, via=list(via), cwd=self.cwd))

    def _assignment(self, node: Any, depth: int, via: list[str]) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self._t(name_node) if name_node is not None else ""
        value = self._word(value_node, depth, via) if value_node is not None else Word("", "")
        return name, value

    def _set(self, name: str, value: Word | str) -> None:
        if self.env is None:
            return
        text = value if isinstance(value, str) else (DYNAMIC if value.dynamic else value.text)
        self.env[name] = text

    # -- simple commands ---------------------------------------------------------------------------
    def _command(
        self, node: Any, depth: int, via: list[str], upstream: list[str], redirects: list[tuple[str, Word]]
    ) -> None:
        env: dict[str, str] = {}
        argv: list[Word] = []
        reds = list(redirects)
        stdin_from: list[str] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                name, value = self._assignment(child, depth, via)
                env[name] = value.text
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                reds.extend(self._redirect(child, depth, via))
            elif child.type == "command_name":
                inner = child.named_children[0] if child.named_children else child
                argv.append(self._word(inner, depth, via))
            elif child.type == "process_substitution":
                before = len(self.out)
                self._stmt(child, depth, via, [])
                stdin_from.extend(inv.program for inv in self.out[before:])
                argv.append(Word("/dev/fd/63", self._t(child), dynamic=True))
            else:
                argv.append(self._word(child, depth, via))
        inv = Invocation(
            argv,
            env=env,
            redirects=reds,
            upstream=list(upstream),
            via=list(via),
            cwd=self.cwd,
            stdin_from=stdin_from,
        )
        self._emit(inv, depth)

    def _emit(self, inv: Invocation, depth: int) -> None:
        self.out.append(inv)
        if not inv.argv or depth > _MAX_DEPTH:
            return
        prog = inv.program
        if prog == "cd" and len(inv.argv) > 1 and self.cwd is not None:
            self.cwd = os.path.normpath(os.path.join(self.cwd, inv.argv[1].text or "~"))
        for inner in _unwrap(inv):
            if inner.inline_code is not None and not inner.argv:
                before = len(self.out)
                self.run(inner.inline_code, depth + 1, inner.via)
                for sub in self.out[before:]:
                    sub.upstream = sub.upstream or list(inv.upstream)
                    sub.env = {**inner.env, **sub.env}
                continue
            self._emit(inner, depth + 1)

    # -- words -------------------------------------------------------------------------------------
    def _word(self, node: Any, depth: int, via: list[str]) -> Word:
        parts: list[tuple[str, str | None, bool]] = []  # (text, unset var name, dynamic)
        before = len(self.out)
        self._collect(node, depth, via, parts, quoted=False)
        subst = tuple(inv.program for inv in self.out[before:] if inv.program)
        text = "".join(p[0] for p in parts)
        unset = tuple(p[1] for p in parts if p[1])
        leading = bool(parts) and parts[0][1] is not None
        dynamic = any(p[2] for p in parts)
        return Word(text, self._t(node), unset, leading, dynamic, subst)

    def _collect(
        self, node: Any, depth: int, via: list[str], parts: list[tuple[str, str | None, bool]], quoted: bool
    ) -> None:
        kind = node.type
        raw = self._t(node)
        if kind == "word" or kind == "number":
            text = _unescape(raw) if not quoted else raw
            if text.startswith("~") and not parts:
                home = (self.env or {}).get("HOME") or os.environ.get("HOME", "~")
                if text == "~" or text.startswith("~/"):
                    text = home + text[1:]
            parts.append((text, None, False))
        elif kind == "raw_string":
            parts.append((raw[1:-1], None, False))
        elif kind == "ansi_c_string":
            parts.append((_ansi_c(raw[2:-1]), None, False))
        elif kind == "string_content":
            parts.append((_unescape_dq(raw), None, False))
        elif kind in ("string", "translated_string", "concatenation"):
            for child in node.named_children:
                self._collect(child, depth, via, parts, quoted=quoted or kind != "concatenation")
            if kind == "string" and not node.named_children:
                parts.append(("", None, False))
        elif kind == "simple_expansion":
            name = raw[1:]
            parts.append(self._lookup(name, None, ""))
        elif kind == "expansion":
            parts.append(self._expansion(node, raw))
        elif kind in ("command_substitution", "process_substitution"):
            self._stmt(node, depth, via, [])
            parts.append((raw, None, True))
        elif kind == "arithmetic_expansion":
            for child in node.named_children:
                if child.type == "command_substitution":
                    self._stmt(child, depth, via, [])
            parts.append((raw, None, True))
        else:
            parts.append((raw, None, bool(node.named_children)))

    def _expansion(self, node: Any, raw: str) -> tuple[str, str | None, bool]:
        m = re.match(r"^\$\{([#!]?)([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(.*)\}$", raw, re.DOTALL)
        if not m:
            return raw, None, True
        prefix, name, op = m.groups()
        if prefix:
            return raw, None, True
        return self._lookup(name, op, raw)

    def _lookup(self, name: str, op: str | None, raw: str) -> tuple[str, str | None, bool]:
        if not _VAR_RE.match(name):
            return ("$" + name, None, True)  # $1, $@, $?: known only at run time
        if self.env is None:
            return ("$" + name, None, True)
        value = self.env.get(name)
        if value == DYNAMIC or (value is None and not self.env_complete):
            return ("$" + name, None, True)
        op = op or ""
        if op.startswith((":?", "?")):
            return (value or "", None, not value)  # the shell stops when it is unset: safe
        if op.startswith((":-", "-", ":=", "=")):
            default = op[2:] if op.startswith(":") else op[1:]
            if value:
                return (value, None, False)
            return (default, None, default.startswith("$"))
        if op.startswith((":+", "+")):
            return ("", None, True)
        if op:
            return (raw, None, True)  # substring, replacement, case changes
        if not value:
            return ("", name, False)
        return (value, None, False)


# -- wrappers ---------------------------------------------------------------------------------------
def _unwrap(inv: Invocation) -> Iterator[Invocation]:
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
            elif "=" in t and _VAR_RE.match(t.split("=", 1)[0]):
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
            elif "=" in t and _VAR_RE.match(t.split("=", 1)[0]):
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


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw, flags=re.DOTALL) if "\\" in raw else raw


def _unescape_dq(raw: str) -> str:
    return re.sub(r'\\([$`"\\\n])', r"\1", raw) if "\\" in raw else raw


def _ansi_c(body: str) -> str:
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return body
