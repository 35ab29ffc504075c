"""Commands run once per input item: `xargs CMD` (with what `echo X |` feeds it, `-I{}`, `-a FILE`) and GNU
`parallel CMD ::: values` (or lines on stdin) filled into `{}`. Split from wrappers.py; pure functions."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from frontdesk.guard.words import SHELLS, Invocation, Word

__all__ = ["xargs_commands", "parallel_commands"]

_XARGS_ARG_FLAGS = {
    "-I",
    "-J",
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
    "--max-lines",
}


def _stdin_items(inv: Invocation, sep: str | None = None) -> list[str]:
    """The input's items: lines, or split at `sep` (`xargs -0`: NUL, `-d X`) as `printf '%s\\0' ~/* |` writes them."""
    text = inv.stdin_text or ""
    parts = text.split(sep) if sep else text.splitlines()
    return [item for item in parts if item.strip()][:8]


def _separator(flags: list[Word]) -> str | None:
    """The item separator xargs is given: `-0`/`--null` (NUL), `-d X`/`--delimiter=X` (escapes decoded)."""
    for k, w in enumerate(flags):
        t = w.text
        if t in ("-0", "--null"):
            return "\0"
        value = flags[k + 1].text if t in ("-d", "--delimiter") and k + 1 < len(flags) else None
        value = (
            t[2:]
            if t.startswith("-d") and len(t) > 2
            else t.split("=", 1)[1]
            if t.startswith("--delimiter=")
            else value
        )
        if value:
            return value.encode("latin-1", "backslashreplace").decode("unicode_escape")[:1] or None
    return None


def xargs_commands(inv: Invocation, inner: Any, code: Any) -> Iterator[Invocation]:
    args = inv.args
    replace: str | None = None
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        t = args[i].text
        if t in ("-I", "-J") and i + 1 < len(args):
            replace = args[i + 1].text
        elif t.startswith(("-I", "-J")) and len(t) > 2:
            replace = t[2:]
        elif t == "-i" or t == "--replace":
            replace = "{}"
        elif t.startswith("--replace=") or t.startswith("-i") and len(t) > 2:
            replace = t.split("=", 1)[1] if "=" in t else t[2:]
            replace = replace or "{}"
        i += 2 if t in _XARGS_ARG_FLAGS else 1
    words = args[i:] or [Word("echo", "echo")]
    items = _stdin_items(inv, _separator(args[:i]))
    if _code_from_input(words, replace):
        for item in items if not inv.stdin_partial else ():
            yield code(item, "xargs sh -c")  # echo CODE | xargs sh -c: the input is the code
        yield inner(words[:1], "xargs", stdin_text=None)  # a shell whose code is each input line: stdin-exec
        return
    arg_file = any(w.text in ("-a", "--arg-file") or w.text.startswith(("--arg-file=", "-a")) for w in args[:i])
    tag = "xargs -a" if arg_file and inv.stdin_file is None else "xargs"  # a listing the line saved: known
    if not items or tag == "xargs -a" or inv.stdin_partial:  # some input the line does not show
        yield inner(words + [Word("", "{xargs}", dynamic=True)], tag, stdin_text=None)
        if inv.stdin_lists and tag == "xargs":  # `ls ~ | xargs -I{} rm -rf ~/{}`: every entry of ~, as ~/*
            listed = _each_entry(words, replace, inv.stdin_lists, inv.cwd)
            if listed is not None:
                yield inner(listed, "xargs", stdin_text=None)
    if not items or tag == "xargs -a":
        return
    for item in items:
        if replace:
            yield inner([_subst(w, replace, item) for w in words], "xargs", stdin_text=None)
        else:
            yield inner(words + [Word(x, x) for x in item.split()], "xargs", stdin_text=None)


_PARALLEL_VALUES = {
    "-j", "--jobs", "-S", "--sshlogin", "--results", "--res", "-N", "-n", "-L", "--delay", "--timeout", "-a",
    "--arg-file", "--joblog", "--tmpdir", "--workdir", "--wd", "--env", "--colsep", "-C", "-d", "--delimiter",
    "-I", "--halt", "-P", "--retries", "--memfree", "--load", "--tagstring", "--sshloginfile", "--slf",
}  # fmt: skip


def parallel_commands(inv: Invocation, inner: Any, code: Any) -> Iterator[Invocation]:
    """GNU parallel: a command template, then `::: values` (or lines on stdin) filled into `{}`."""
    args = inv.args
    i = 0
    while i < len(args) and args[i].is_flag and args[i].text not in (":::", "::::", ":::+"):
        t = args[i].text
        i += 2 if t in _PARALLEL_VALUES else 1
    template: list[Word] = []
    while i < len(args) and args[i].text not in (":::", "::::", ":::+", "::::+"):
        template.append(args[i])
        i += 1
    values = [w.text for w in args[i:] if w.text not in (":::", "::::", ":::+", "::::+")][:8]
    if _code_from_input(template, "{}"):
        for value in values:
            yield code(value, "parallel")
        if not values:  # a shell whose code is each input line: stdin-exec
            yield inner(template[:1], "parallel", stdin_text=None)
        return
    if not values and not _stdin_items(inv) and inv.stdin_lists and template:
        listed = _each_entry(template, "{}", inv.stdin_lists, inv.cwd)  # `ls ~ | parallel rm -rf ~/{}`
        if listed is not None:
            yield inner(listed, "parallel", stdin_text=None)
    values = values or _stdin_items(inv) or [""]
    for value in values:
        if not template:
            yield code(value, "parallel")
            continue
        has_slot = any(re.search(r"\{\d*\.?/?/?\}", w.text) for w in template)
        words = [_subst(w, None, value) for w in template]
        if not has_slot and value:
            words.append(Word(value, value))
        if len(words) == 1:
            yield code(words[0].text, "parallel")
        else:
            yield inner(words, "parallel", stdin_text=None)


def _each_entry(words: list[Word], token: str | None, listed: str, cwd: str | None) -> list[Word] | None:
    """The command run once per entry of `listed`, written with the glob of all of them: each word
    `PREFIX{}` whose PREFIX is the listed directory becomes `PREFIX*`; with no token, the entries are
    names relative to the working directory, so they stand for `*` only when that is the listed one."""
    here = os.path.normpath(cwd or ".")
    if token is None:
        return [*words, Word("*", "*")] if here == listed else None
    out: list[Word] = []
    hit = False
    for w in words:
        prefix, found, rest = w.text.partition(token)
        if found and not rest.strip("/") and os.path.normpath(os.path.join(here, prefix or ".")) == listed:
            out.append(Word(prefix + "*", w.raw))
            hit = True
        elif found and " " in w.text and "/" + token in w.text:  # sh -c 'rm -rf ~/{}': code, each entry at DIR/
            out.append(Word(w.text.replace("/" + token, "/*"), w.raw))
            hit = True
        else:
            out.append(w)
    return out if hit else None


def _code_from_input(words: list[Word], token: str | None) -> bool:
    """`xargs bash -c`, `xargs -I{} sh -c {}`, `parallel bash -c {}`: the shell's code is the input itself."""
    if len(words) < 2 or words[0].text.rsplit("/", 1)[-1] not in SHELLS or words[1].text != "-c":
        return False
    return len(words) == 2 or (len(words) == 3 and token is not None and words[2].text == token)


def _subst(word: Word, token: str | None, value: str) -> Word:
    text = word.text.replace(token, value) if token else re.sub(r"\{\d*\.?/?/?\}", value, word.text)
    return word if text == word.text else Word(text, word.raw)
