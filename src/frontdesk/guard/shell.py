"""Turn a shell command into the simple commands it would run, with the tree-sitter bash grammar.

Each simple command becomes an `Invocation`: its words expanded against the current environment (an
unset or empty variable is known as such), its prefix assignments, redirections, the programs upstream in
its pipeline, and the wrappers it sits under. Wrappers are looked through: `sudo`, `env`, `nice`, `nohup`,
`timeout`, `srun`, `xargs`, `find -exec`, `bash -c`, `sh -c`, `eval`, `watch`, `su -c`, `python -m`,
command and process substitutions. Words (quoting, variables, substitutions) are read by
`shellwords.WordReader`, which the walker extends. Nothing here runs anything or reads files.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from typing import Any

from frontdesk.guard.savedlists import SavedListings
from frontdesk.guard.shelltext import (
    find_fed,
    get_parser,
    keeps_most,
    only_split_herestrings,
    own_commands,
    passes_on,
    split_herestring,
    stage_lists,
    through_wrappers,
)
from frontdesk.guard.shellwords import fd_of_next
from frontdesk.guard.words import DYNAMIC, Invocation, Parsed, Word, basename
from frontdesk.guard.wrappers import positional, unwrap

__all__ = ["DYNAMIC", "Word", "Invocation", "Parsed", "parse", "basename"]

_MAX_DEPTH = 6


def parse(
    command: str, env: Mapping[str, str] | None = None, cwd: str | None = None, env_complete: bool = True
) -> Parsed:
    """Parse `command` into invocations, expanding variables against `env`.

    With `env=None` nothing is known; with `env_complete=False` a variable missing from `env` is unknown
    (not unset), while one the command itself empties (`X=; rm -rf $X/`) is still known to be empty.
    """
    walker = _Walker(dict(env) if env is not None else None, cwd, env_complete)
    error = walker.run(command, 0)
    return Parsed(walker.out, error or walker.nested_error, walker.functions, walker.written)


# Text bash splits on blanks alone: no quotes, expansions, globs, operators, comments or tildes.
_SIMPLE = re.compile(r"[A-Za-z0-9_@%+=:,./ \t-]*")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RESERVED = frozenset("if then else elif fi case esac for select while until do done in function time coproc".split())
_DECLARE = frozenset(("export", "declare", "typeset", "local", "readonly"))


# Variables whose value is a command some program runs (git, editors, pagers, prompts), or a file bash sources.
_CODE_VARS = frozenset(
    "GIT_SSH_COMMAND GIT_SSH GIT_EDITOR GIT_PAGER GIT_SEQUENCE_EDITOR GIT_EXTERNAL_DIFF GIT_ASKPASS SSH_ASKPASS "
    "SUDO_ASKPASS EDITOR VISUAL PAGER MANPAGER SYSTEMD_EDITOR SUDO_EDITOR LESSOPEN LESSCLOSE PROMPT_COMMAND "
    "FCEDIT BASH_ENV ENV".split()
)


class _Walker(SavedListings):
    """Walks the statements of a command line, emitting an `Invocation` per simple command it would run."""

    def __init__(self, env: dict[str, str] | None, cwd: str | None, env_complete: bool = True) -> None:
        super().__init__(env, cwd, env_complete)
        self.functions: dict[str, str] = {}
        self.written: dict[str, str] = {}  # echo CMD > x.sh: what the line writes, by absolute path
        self._feed: str | None = None  # stdin text for the next simple command (`echo X | bash`)
        self._lists: str | None = None  # the directory the previous pipeline stage lists (`ls ~ |`)
        self._partial = False
        self.nested_error = False
        self.aliases: dict[str, str] = {}  # ... of which only a part is known (`(crontab -l; echo X) | crontab -`)
        self._upstream: list[str] | None = None

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
        safe = re.sub(rb"(?<=[ \t])~(?=[ \t])", b"_", safe)  # `[[ -d ~ ]]`: the grammar fails on a lone ~ there
        saved, self.src = self.src, data
        try:
            root = get_parser().parse(safe).root_node
            self._stmt(root, depth, via or [], [])
            return bool(root.has_error) and not (b"<<<" in safe and only_split_herestrings(root, self._t))
        finally:
            self.src = saved

    def _simple(self, source: str, depth: int, via: list[str]) -> None:
        """A command with no quoting, expansion or operators: bash would split it on blanks, so do we."""
        words = source.split()
        feed, self._feed = self._feed, None  # `ssh host bash -s <<< CODE`: the stdin this code was handed
        env: dict[str, str] = {}
        while words and _ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if not words:
            for name, value in env.items():
                self._set(name, value)
                self._emit(Invocation([], env={name: value}, via=list(via), cwd=self.cwd), depth)
            return
        if words[0] in _DECLARE:
            for word in words[1:]:
                if _ASSIGNMENT.match(word):
                    name, _, value = word.partition("=")
                    self._set(name, value)
                    env[name] = value
        argv = [Word(w, w) for w in words]
        inv = Invocation(argv, env=env, via=list(via), cwd=self.cwd, stdin_text=feed, stdin_partial=self._partial)
        self._emit(inv, depth)

    # -- statements --------------------------------------------------------------------------------
    def _stmt(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, depth, via, [], redirects)
        elif kind == "pipeline":
            self._pipeline(node, depth, via, redirects)
        elif kind == "redirected_statement":
            self._redirected(node, depth, via, redirects)
        elif kind == "unset_command":
            words = [Word("unset", "unset")] + [Word(self._t(c), self._t(c)) for c in node.named_children]
            self.out.append(Invocation(words, via=list(via), cwd=self.cwd))
        elif kind == "declaration_command":
            self._declaration(node, depth, via)
        elif kind == "variable_assignment":
            name, value = self._assignment(node, depth, via)
            self._set(name, value)
            self._emit(Invocation([], env={name: value.text}, via=list(via), cwd=self.cwd), depth)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self._stmt(child, depth, via, redirects)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name is not None and body is not None:
                self.functions[self._t(name)] = self._t(body)
                self._stmt(body, depth, via + [f"function {self._t(name)}"], redirects)
        elif kind in ("while_statement", "until_statement", "c_style_for_statement"):
            self._while(node, depth, via, redirects)
        elif kind in ("for_statement", "select_statement"):
            self._for(node, depth, via, redirects)
        elif kind in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                self._stmt(child, depth, via, [])
        elif kind == "heredoc_body" or kind == "comment":
            return
        else:
            for child in node.named_children:
                self._stmt(child, depth, via, redirects)

    def _redirected(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        reds = list(redirects)
        body = node.child_by_field_name("body")
        words: list[Word] = []
        stdin_text: str | None = None
        tails: list[Any] = []
        lists: str | None = None
        here = False
        for child in node.named_children:
            if body is not None and child.id == body.id:
                continue
            if split_herestring(child, self._t):
                here = True  # `cat > F <<< X`: the grammar reads `<<<` after a redirection as `<<` and `< X`
                continue
            red = self._redirect(child, depth, via, herestring=here)
            here = False
            reds.extend(red.reds)
            words.extend(red.words)
            stdin_text = red.stdin_text if red.stdin_text is not None else stdin_text
            lists = red.stdin_lists or lists
            tails.extend(red.tails)
        before = len(self.out)
        if body is not None and body.type == "command":
            self._lists = lists or self._lists  # `xargs -I{} rm -rf ~/{} < <(ls ~)`
            self._command(body, depth, via, [], reds, words, stdin_text)
            self._save_stage(own_commands(self.out[before:], via), [], None, ([], False))  # `ls ~ > l`
        elif body is not None:
            if body.type in ("while_statement", "until_statement"):  # `done < <(ls ~)`: what `read` is given
                self._lists, self._feed = lists, stdin_text
            self._stmt(body, depth, via, reds)
            if body.type != "pipeline":  # `cd ~ && ls > l`: the grammar hangs `> l` on the whole list
                self._save_stage(own_commands(self.out[before:], via), [], None, ([], False))
        elif reds:
            self.out.append(Invocation([], redirects=reds, via=list(via), cwd=self.cwd))
        feeder = next(iter(own_commands(self.out[before:], via)), None)
        for tail in tails:  # `cat <<EOF | python3 -`: the grammar puts the rest of the pipeline in the heredoc
            if tail.type == "pipeline" and feeder is not None:
                self._feed = passes_on(feeder)
                self._upstream = [feeder.program]
            self._stmt(tail, depth, via, [])
            self._feed, self._upstream = None, None

    # -- simple commands ---------------------------------------------------------------------------
    def _pipeline(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        """Each stage fed by the ones before it; `find ... | xargs CMD` also as the find -exec it amounts to."""
        upstream: list[str] = list(self._upstream or [])
        feed, self._upstream = self._feed, None
        last = len(node.named_children) - 1
        finds: list[Invocation] = []
        finds_last: list[Invocation] = []
        lists: str | None = None
        chain: list[Invocation] = []  # the stages so far: what a file written now holds (savedlists)
        narrowed = False  # a stage since the last find passed on only some of its matches (`grep x`)
        for k, child in enumerate(node.named_children):
            before = len(self.out)
            self._feed, self._lists = feed, lists
            # `yes | head > f`: the grammar hangs the redirection on the whole pipeline; output goes to the
            # last command only, input comes to the first only
            reds = [(op, w) for op, w in redirects if (k == 0 if op.startswith("<") else k == last)]
            self._stmt(child, depth, via, reds)
            self._feed, self._lists = None, None
            # `(echo a; echo b) | bash`: the stage's output is what its commands print; `(crontab -l; echo X)`
            # prints X after text the line does not show (partial: the known part is read, the rest is unknown)
            own = own_commands(self.out[before:], via)  # `sudo echo X | bash`: echo's output, not sudo's
            self._save_stage(own, chain, lists, (finds, narrowed))  # `ls ~ | tee l`, `find ~ | grep -v x > l`
            chain = [*chain, *own]
            texts = [passes_on(inv) for inv in own]
            known = [t for t in texts if t is not None]
            feed = "".join(known) if known else None
            lists = stage_lists(own, lists, self.cwd)  # `ls ~ | grep -v keep |`: still (nearly) every entry
            self._partial = feed is not None and len(known) < len(texts)
            for inv in self.out[before:]:
                if not inv.upstream:
                    inv.upstream = list(upstream)
            upstream.extend(p for inv in own if inv.stdin_file for p in inv.stdin_from)  # `cat l |`: what made l
            upstream.extend(inv.program for inv in self.out[before:] if not inv.via or through_wrappers(inv.via, via))
            stage = self.out[before:]
            self.out.extend(find_fed(finds, stage, via, filtered=narrowed))
            finds_last, fed = self._stage_finds(own)  # its own finds, or those of a saved listing it reads
            narrowed = fed or not finds_last and (narrowed or not all(keeps_most(inv) for inv in own))  # grep -v
            finds = [*finds, *finds_last]

    def _command(
        self,
        node: Any,
        depth: int,
        via: list[str],
        upstream: list[str],
        redirects: list[tuple[str, Word]],
        extra_words: list[Word] | None = None,
        stdin_text: str | None = None,
    ) -> None:
        feed, self._feed = self._feed, None
        lists, self._lists = self._lists, None
        partial = self._partial and stdin_text is None and feed is not None
        fed_by, self._upstream = self._upstream, None
        stdin_text = stdin_text if stdin_text is not None else feed
        upstream = upstream or fed_by or []
        env: dict[str, str] = {}
        argv: list[Word] = []
        reds = list(redirects)
        stdin_from: list[str] = []
        children = node.named_children
        for k, child in enumerate(children):
            if child.type == "variable_assignment":
                name, value = self._assignment(child, depth, via)
                env[name] = value.text
            elif child.type == "number" and fd_of_next(children, k):
                continue  # `bash 0<<< CODE`: the grammar reads the fd as a word
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                red = self._redirect(child, depth, via)
                reds.extend(red.reds)
                argv.extend(red.words)
                stdin_text = red.stdin_text if red.stdin_text is not None else stdin_text
                stdin_from.extend(red.stdin_from)
            elif child.type == "command_name":
                inner = child.named_children[0] if child.named_children else child
                argv.append(self._word(inner, depth, via))
            elif child.type == "process_substitution":
                before = len(self.out)
                self._stmt(child, depth, via, [])
                stdin_from.extend(inv.program for inv in self.out[before:])
                argv.append(Word("/dev/fd/63", self._t(child), dynamic=True))
                texts = [passes_on(inv) for inv in own_commands(self.out[before:], via)]
                if texts and None not in texts and self._t(child).startswith("<("):
                    self.written["/dev/fd/63"] = "".join(t or "" for t in texts)  # bash <(echo X): X is the script
            else:
                argv.append(self._word(child, depth, via))
        argv.extend(extra_words or ())
        inv = Invocation(
            self._expanded(argv),
            env=env,
            redirects=reds,
            upstream=list(upstream),
            via=list(via),
            cwd=self.cwd,
            stdin_from=stdin_from,
            stdin_text=stdin_text,
            stdin_partial=partial,
            stdin_lists=lists if stdin_text is None else None,
        )
        self._emit(inv, depth)

    def _emit(self, inv: Invocation, depth: int) -> None:
        saved = self._read_saved(inv)  # `xargs rm -rf < l` after `ls -d ~/* > l`: as `ls -d ~/* | xargs rm -rf`
        start = len(self.out)
        self.out.append(inv)
        if depth > _MAX_DEPTH:
            return
        # what the line writes where (`echo X > f`; `echo X | tee f` comes here as an argv-less write of f)
        text = (passes_on(inv) if inv.argv else inv.stdin_text) if inv.redirects and self.cwd is not None else None
        for op, target in inv.redirects if text is not None else ():
            if op in (">", ">|", ">>", "&>") and target.text and not target.dynamic and self.cwd is not None:
                path = os.path.normpath(os.path.join(self.cwd, target.text))
                self.written[path] = (self.written.get(path, "") if op == ">>" else "") + (text or "")
        for name in _CODE_VARS.intersection(inv.env):  # GIT_SSH_COMMAND='rm -rf ~' git fetch: a command git runs
            value = inv.env[name].lstrip("|")
            code = f"source {shlex.quote(value)}" if name in ("BASH_ENV", "ENV") else value
            if value and f"${name}" not in inv.via:
                self.run(code, depth + 1, inv.via + [f"${name}"])
        if not inv.argv:
            return
        prog = inv.program
        if prog == "alias":
            self.aliases.update(w.text.split("=", 1) for w in inv.args if "=" in w.text)  # type: ignore[misc]
        elif prog in self.aliases and f"alias {prog}" not in inv.via:
            # alias x='rm -rf'; x ~ : the value, then this use's words
            words = " ".join(shlex.quote(w.text) for w in inv.args)
            self.run(f"{self.aliases[prog]} {words}", depth + 1, inv.via + [f"alias {prog}"])
        if prog in self.functions and f"function {prog}" not in inv.via:
            # f() { rm -rf "$1"; }; f ~ : the body again, with this call's words as $1 ... (none: $1 is empty)
            complete = not any(w.dynamic for w in inv.args)
            body = positional(self.functions[prog], [prog] + [w.text for w in inv.args], complete)
            self.run(body, depth + 1, inv.via + [f"function {prog}"])
        self._builtin(inv)  # `set -- a b` ($1 $2 $@), `mapfile -t a < <(ls ~)` ("${a[@]}")
        if prog in ("cd", "pushd") and self.cwd is not None:  # `cd` alone goes home; `pushd DIR` moves too
            # an unquoted empty word is dropped: `cd $NOPE` is `cd`, home
            dirs = [w.text for w in inv.args if not w.is_flag and (w.text or any(q in w.raw for q in "'\""))] or (
                [(self.env or {}).get("HOME", "")] if prog == "cd" else []
            )
            if dirs and dirs[0]:
                cdpath = inv.env.get("CDPATH", (self.env or {}).get("CDPATH", ""))
                self.cwd = _cd(self.cwd, dirs[0], cdpath if prog == "cd" else "")
        for inner in unwrap(inv):
            if inner.inline_code is not None and not inner.argv:
                before = len(self.out)
                tag = inner.via[-1] if inner.via else ""
                if tag.endswith(" -c") or tag in ("ssh", "eval", "env -S"):  # the code keeps the wrapper's stdin
                    self._feed, self._partial, self._lists = inv.stdin_text, inv.stdin_partial, inv.stdin_lists
                if self.run(inner.inline_code, depth + 1, inner.via):
                    self.nested_error = True  # code handed to a shell (bash -c, ssh, crontab) the parser misread
                self._feed, self._partial, self._lists = None, False, None
                for sub in self.out[before:]:
                    sub.upstream = sub.upstream or list(inv.upstream)
                    sub.env = {**inner.env, **sub.env}
                continue
            if inner.cwd and inner.cwd.startswith("~"):  # docker run -v ~:/h -w /h: the mapped workdir
                inner.cwd = (self.env or {}).get("HOME", "~") + inner.cwd[1:]
            self._emit(inner, depth + 1)
        self._fed_finds(saved, start, inv.via)


def _cd(cwd: str, target: str, cdpath: str) -> str:
    """Where `cd TARGET` lands: a relative name not starting with `.` is looked up in CDPATH first, as bash does
    (`CDPATH=/ cd home` is /home, not ./home); the first entry holding that directory wins, else the cwd's."""
    if cdpath and cdpath != DYNAMIC and not target.startswith(("/", ".")):
        for entry in cdpath.split(":"):
            found = os.path.normpath(os.path.join(cwd, entry or ".", target))
            if os.path.isdir(found):
                return found
    return os.path.normpath(os.path.join(cwd, target))
