"""A listing kept in a file and read back on the same line or in the same script: `ls ~ > l; xargs -a l rm -rf`,
`find ~ -maxdepth 1 > x && xargs rm -rf < x`, `ls ~ | tee l; cat l | xargs rm -rf`, `rm -rf $(cat l)`, `while
read f; do rm -rf "$f"; done < l`. What a command writes to a file is what it would have passed down a pipe
(its text, the directory it lists, the finds it carries, the commands that made it); a later read of that file
(`< F`, `xargs -a F`, `cat|sort|tac|grep -v|tail|head F`, `$(cat F)`, `$(< F)`) gets it back, so each reading
is judged as the pipe it amounts to: `find . -name '*.o' > objs; xargs rm -f < objs` stays allowed as `find .
-name '*.o' | xargs rm -f` is, and a home listed into a file then deleted is `rm -rf ~/*`. Loops live here too:
a `for` over a list the line shows is walked once per value, a `while read` once per line it reads."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from typing import Any

from frontdesk.guard.shelltext import find_fed, keeps_most, listing_of, loop_tag, passes_on, stage_lists
from frontdesk.guard.shellwords import WordReader
from frontdesk.guard.words import DYNAMIC, Invocation, Word

__all__ = ["Saved", "SavedListings", "saved_input"]

_OUT_OPS = frozenset((">", ">|", ">>", "&>", "&>>"))
_READERS = frozenset({"cat", "sort", "uniq", "tac", "grep", "egrep", "fgrep", "rg", "tail", "head", "sed", "awk"})
_LOOP_WALKS = 64  # loop bodies walked once per listed value, in all
_READ_VALUED = frozenset(("-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"))


@dataclass
class Saved:
    """What a file the line wrote holds, as the pipe it stands for: the text, the directory listed, the finds."""

    chain: list[Invocation]
    text: str | None = None
    lists: str | None = None
    finds: list[Invocation] = field(default_factory=list)
    narrowed: bool = False


def _path(word: Word, cwd: str | None) -> str | None:
    if word.dynamic or not word.text or cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, word.text))


def _arg_file(argv: list[Word]) -> Word | None:
    """The file `xargs -a F` / `--arg-file[=]F` reads its items from."""
    for k, w in enumerate(argv[1:], 1):
        t = w.text
        if t in ("-a", "--arg-file") and k + 1 < len(argv):
            return argv[k + 1]
        if t.startswith("--arg-file="):
            return Word(t.split("=", 1)[1], w.raw)
        if t.startswith("-a") and len(t) > 2:
            return Word(t[2:], w.raw)
        if not t.startswith("-"):
            return None
    return None


def saved_input(inv: Invocation, saved: dict[str, Saved]) -> tuple[str, Saved] | None:
    """The saved listing `inv` reads, with the word naming it: `< F`, `xargs -a F`, or a reader's file operand."""
    if not saved or not inv.argv:
        return None
    outs = {w.text for op, w in inv.redirects if op in _OUT_OPS}  # `a && b > F && c < F`: the grammar hangs both
    words = [w for op, w in inv.redirects if op == "<" and w.text not in outs]  # on every command of the list
    if inv.program == "xargs":
        words += [w for w in [_arg_file(inv.argv)] if w is not None]
    elif inv.program in _READERS:
        words += [w for w in inv.args if not w.is_flag]
    for word in words:
        path = _path(word, inv.cwd)
        if path is not None and path in saved:
            return word.text, saved[path]
    return None


def _stdout_files(inv: Invocation) -> list[str]:
    """The files `inv` writes what it prints to: `> F`, `>> F`, `&> F`, and `tee [-a] F ...`."""
    words = [w for op, w in inv.redirects if op in _OUT_OPS]
    if inv.program == "tee":
        words += [w for w in inv.args if not w.is_flag]
    paths = [_path(w, inv.cwd) for w in words]
    return [p for p in paths if p is not None and not p.startswith("/dev/")]


class SavedListings(WordReader):
    """The walker's memory of files written with what a command printed, and its loops."""

    def __init__(self, env: dict[str, str] | None, cwd: str | None, env_complete: bool = True) -> None:
        super().__init__(env, cwd, env_complete)
        self._loop_walks = 0

    def _save_stage(self, own: list[Invocation], chain: list[Invocation], lists: str | None, finds: Any) -> None:
        """Record what each of a stage's commands writes to a file as the pipe it would have fed: `ls ~ > l`,
        `find ~ | grep -v x > l`, `ls ~ | tee l` (`finds`: the finds upstream and whether a stage narrowed them)."""
        before, narrowed = finds
        for inv in own:
            files = _stdout_files(inv)
            if not files:
                continue
            outs = {w.text for op, w in inv.redirects if op in _OUT_OPS}
            bare = replace(inv, redirects=[(op, w) for op, w in inv.redirects if op == "<" and w.text not in outs])
            got = saved_input(bare, self.saved)
            new = Saved(
                [*chain, bare] if got is None else [*got[1].chain],
                passes_on(bare),
                stage_lists([bare], lists, inv.cwd),
                [*before, *([bare] if inv.program == "find" else [])] if got is None else got[1].finds,
                narrowed if got is None else got[1].narrowed,
            )
            for path in files:
                old = self.saved.get(path)
                keep = old is not None and any(op in (">>", "&>>") for op, _ in inv.redirects)
                self.saved[path] = old if keep and old is not None and (old.text or old.lists or old.finds) else new

    def _read_saved(self, inv: Invocation) -> Saved | None:
        """Give `inv` the input a saved listing holds, when it reads one and has no other (see `saved_input`)."""
        if inv.stdin_text is not None or inv.stdin_lists is not None or inv.stdin_from:
            return None
        got = saved_input(inv, self.saved)
        if got is None:
            return None
        inv.stdin_file, saved = got
        inv.stdin_text, inv.stdin_lists = saved.text, saved.lists
        inv.stdin_from = [p.program for p in saved.chain]
        inv.upstream = inv.upstream or list(inv.stdin_from)
        return saved

    def _fed_finds(self, saved: Saved | None, start: int, via: list[str]) -> None:
        """`find ROOT ... > F; xargs CMD < F`: the `find ROOT ... -exec CMD {} +` it amounts to, as for a pipe."""
        if saved is not None and saved.finds:
            self.out.extend(find_fed(saved.finds, self.out[start:], via, filtered=saved.narrowed))

    def _unsaved(self, invs: list[Invocation]) -> list[Invocation]:
        """A substitution's commands with a reader of a saved listing put back as the commands that made it
        (`$(cat l)` after `ls -d ~/* > l` is `$(ls -d ~/*)`), in the reader's place (its wrappers, its cwd)."""
        out: list[Invocation] = []
        for inv in invs:
            got = saved_input(inv, self.saved) if inv.stdin_file is not None else None
            out += [replace(c, via=list(inv.via)) for c in got[1].chain] if got and keeps_most(inv) else [inv]
        return out

    def _stage_finds(self, own: list[Invocation]) -> tuple[list[Invocation], bool]:
        """The finds a stage carries (its own, or a saved listing's it reads) and whether they were narrowed."""
        finds = [inv for inv in own if inv.program == "find"]
        narrowed = False
        for inv in own:
            got = saved_input(inv, self.saved) if inv.stdin_file is not None else None
            if got is not None and got[1].finds:
                finds += got[1].finds
                narrowed = narrowed or got[1].narrowed or not keeps_most(inv)
        return finds, narrowed

    def _builtin(self, inv: Invocation) -> None:
        """`read f` sets f (see `read_value`) besides what the reader's builtins set."""
        super()._builtin(inv)
        texts = [w.text for w in inv.args]
        files = [w for w in inv.args if not w.is_flag]
        if inv.program in ("cp", "mv") and len(files) == 2 and (src := _path(files[0], inv.cwd)) in self.saved:
            dst = _path(files[1], inv.cwd)  # `ls ~ > l; cp l l2`: l2 holds the listing too
            if dst is not None:
                self.saved[dst] = self.saved[src]
        if inv.program == "printf" and len(texts) > 2 and texts[0] == "-v":  # printf -v c '%s' rm; $c -rf ~
            shown = passes_on(replace(inv, argv=[inv.argv[0], *inv.args[2:]], redirects=[]))
            self._set(texts[1], shown if shown is not None else DYNAMIC)
        if inv.program == "read":  # `IFS=, read a b <<< "rm,-rf"`: the fields of the line, as read splits it
            names, value = read_names(inv), read_value(inv)
            ifs = inv.env.get("IFS", " \t\n")
            cut = value.strip(ifs) if value != DYNAMIC and ifs and len(names) > 1 else None
            fields = re.split("[" + re.escape(ifs) + "]+", cut, maxsplit=len(names) - 1) if cut is not None else []
            for k, name in enumerate(names):
                self._set(name, value if len(names) == 1 else fields[k] if k < len(fields) else DYNAMIC)
            at = next((k for k, t in enumerate(texts[:-1]) if re.fullmatch(r"-[a-zA-Z]*a", t)), None)
            if at is not None and value != DYNAMIC:  # read -ra x <<< "rm -rf ~": "${x[@]}" is those words
                self.arrays[texts[at + 1]] = [Word(t, t) for t in value.split()][:16]

    # -- loops -------------------------------------------------------------------------------------
    def _for(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        tag = loop_tag(self._t(node))
        via = via + [tag] if tag else via
        var = node.child_by_field_name("variable")
        items: list[Word] = []
        start = len(self.out)
        for child in node.named_children:
            if child.type in _LIST_WORDS:
                items.append(self._word(child, depth, via))  # runs substitutions in the list
        items = self._expanded(items)  # `for f in "${a[@]}"`: an array the line set, each value walked
        feeders = [p for w in items for p in w.subst_programs]
        known = 0 < len(items) <= 8 and not any(w.dynamic or w.unset_vars for w in items)
        known = known and self._loop_walks + len(items) <= _LOOP_WALKS  # nested loops: a bounded number of walks
        self._loop_walks += len(items) if known else 0
        body = node.child_by_field_name("body")
        before = len(self.out)
        values = [w.text for w in items] if known and var is not None else [DYNAMIC]
        subs = self._unsaved([inv for inv in self.out[start:] if inv.program])
        if len(items) == 1 and items[0].dynamic and listing_of(subs, self.cwd) is not None:
            values = ["*"]  # `for f in $(ls ~ [| grep -v x]); do rm -rf ~/$f`: each entry of ~, as ~/*
        # `for d in build ~; do rm -rf $d; done`: a list the line shows is walked once per value
        for value in values:
            if var is not None:
                self._set(self._t(var), value)
            if body is not None:
                self._stmt(body, depth, via, redirects)
        if body is None or var is None or not feeders:
            return
        # `for p in $(nvidia-smi ...); do kill $p; done`: what the list ran feeds the commands using the variable
        name = re.compile(r"\$\{?" + re.escape(self._t(var)) + r"\b")
        for inv in self.out[before:]:
            if any(name.search(w.raw) for w in inv.argv):
                inv.upstream = [*inv.upstream, *feeders]

    def _while(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        """`while read f; do BODY; done`: `read` sets f to the first line it is given (`_builtin`); the body is
        walked again for each further line the line shows (`printf '%s\\n' /tmp/x ~ | while read f`)."""
        tag = loop_tag(self._t(node))
        via = via + [tag] if tag else via
        start = len(self.out)
        for child in node.named_children:
            self._stmt(child, depth, via, redirects)
        reads = [inv for inv in self.out[start:] if inv.program == "read" and inv.via == via]
        body = node.child_by_field_name("body")
        names = read_names(reads[0]) if reads else []
        if body is None or not names or reads[0].stdin_text is None or reads[0].stdin_partial:
            return
        for line in [x for x in reads[0].stdin_text.splitlines() if x.strip()][1:8]:
            if self._loop_walks >= _LOOP_WALKS:
                return
            self._loop_walks += 1
            self._set(names[0], line)
            self._stmt(body, depth, via, redirects)


_LIST_WORDS = frozenset(
    ("word", "string", "concatenation", "simple_expansion", "expansion", "raw_string", "command_substitution")
)


def read_names(inv: Invocation) -> list[str]:
    """The variables `read [-r] [-p P] [-d X] NAME ...` sets (REPLY with none; `-a NAME` an array)."""
    names: list[str] = []
    k = 0
    args = [w.text for w in inv.args]
    while k < len(args):
        t = args[k]
        if t in _READ_VALUED or re.fullmatch(r"-[a-zA-Z]*a", t):  # -ra NAME: NAME is an array
            names += [args[k + 1]] if t.endswith("a") and k + 1 < len(args) else []
            k += 2
            continue
        if not t.startswith("-") and re.fullmatch(r"[A-Za-z_]\w*", t):
            names.append(t)
        k += 1
    return names or ["REPLY"]


def read_value(inv: Invocation) -> str:
    """What `read` puts in its first variable: the first line it is given, `*` for each entry of a listed
    directory (`ls ~ | while read f`), else unknown."""
    if inv.stdin_text is not None and not inv.stdin_partial:
        lines = [x for x in inv.stdin_text.splitlines() if x.strip()]
        return lines[0] if lines else DYNAMIC
    return "*" if inv.stdin_lists is not None else DYNAMIC
