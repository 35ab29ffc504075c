"""Small pieces of the shell front end: redirection results, loop tags, what a pipeline stage passes on,
and bash's quoting rules for words. Plain functions over text and `Invocation`s."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from frontdesk.guard.words import Invocation, Word

__all__ = [
    "STATEMENTS",
    "Redirect",
    "loop_tag",
    "passes_on",
    "find_fed",
    "known_output",
    "unescape",
    "unescape_dq",
    "ansi_c",
]

STATEMENTS = frozenset(
    ("pipeline", "command", "list", "redirected_statement", "subshell", "compound_statement", "negated_command")
)


@dataclass
class Redirect:
    """One redirection as read: targets, stray words, stdin text or producers, statements after it."""

    reds: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    stdin_text: str | None = None
    tails: list[Any] = field(default_factory=list)
    stdin_from: list[str] = field(default_factory=list)


_FOREVER = re.compile(
    r"^(while\s+(true|:|\[+ *1 *\]+|\(\( *1 *\)\)|sleep\s+[\d.]+[smh]?)|until\s+false)\s*;?\s*(do|\n)"
    r"|^for\s*\(\([^;)]*;\s*;"  # for ((;;)), for ((i=0;;i++)): no condition
)
_BIG_NUMBER = re.compile(r"(?<![\w-])([2-9]\d{2,}|1\d{3,})(?![\w.])")


def loop_tag(text: str) -> str | None:
    """`unbounded loop` (while true), `large loop` (a header counting to 200 or more), or None."""
    if _FOREVER.match(text):
        return "unbounded loop"
    header = text.split(" do", 1)[0].split(";do", 1)[0][:200]
    if header.startswith(("for", "select")) and _BIG_NUMBER.search(header):
        return "large loop"
    return None


def passes_on(inv: Invocation) -> str | None:
    """What a pipeline stage writes to the next one, when the line says: `echo X`, `printf X`, `cat <<EOF`."""
    prog = inv.program
    args = [w for w in inv.args if not (w.is_flag and prog == "echo")]
    if any(w.dynamic for w in args):
        return None
    if prog == "echo":
        return " ".join(w.text for w in args) + "\n"
    if prog == "printf" and args:
        return args[0].text.replace("\\n", "\n").replace("%s", " ".join(w.text for w in args[1:]))
    if (prog == "cat" and not args or prog == "tee") and not inv.stdin_partial:
        return inv.stdin_text  # tee passes its input on as well as writing it
    return None


def known_output(invs: list[Invocation], cwd: str | None, via: list[str]) -> str | None:
    """What `$(...)` prints when the line says: one echo/printf of known words, dirname, basename, pwd
    (`via`: the wrappers the substitution itself runs under, so `bash -c '$(echo rm) -rf ~'` reads too)."""
    if len(invs) != 1 or not invs[0].argv or invs[0].via != via or invs[0].redirects:
        return None
    inv = invs[0]
    args = [w.text for w in inv.args]
    if any(w.dynamic or w.unset_vars for w in inv.args):
        return None
    if inv.program in ("echo", "printf"):
        text = passes_on(inv)
        return text.rstrip("\n") if text is not None else None
    if inv.program in ("dirname", "basename") and len(args) == 1 and not args[0].startswith("-"):
        path = args[0].rstrip("/") or "/"
        if inv.program == "basename":
            return posixpath.basename(path) or path
        return posixpath.dirname(path) or "."
    if inv.program == "pwd" and not args and cwd:
        return cwd
    return None


def unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw, flags=re.DOTALL) if "\\" in raw else raw


def unescape_dq(raw: str) -> str:
    return re.sub(r'\\([$`"\\\n])', r"\1", raw) if "\\" in raw else raw


def ansi_c(body: str) -> str:
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return body


_FEEDS_ON = ("xargs", "parallel")


def find_fed(finds: list[Invocation], stage: list[Invocation], via: list[str], filtered: bool) -> list[Invocation]:
    """`find ROOT ... | xargs CMD`: each command xargs (or parallel) runs on find's matches, written as the
    `find ROOT ... -exec CMD {} +` it amounts to, so the rules for find handing its matches to a deleter see
    the tree. `filtered`: a stage in between (grep) passes on only some matches, read like a -path filter."""
    out: list[Invocation] = []
    for inner in stage:
        if not inner.argv or inner.via[: len(via)] != via or not set(inner.via[len(via) :]) & set(_FEEDS_ON):
            continue
        words = [w for w in inner.argv if w.text != "{xargs}" or not w.dynamic]
        for find in finds:
            extra = [Word("-path", "-path"), Word("{piped}", "{piped}")] if filtered else []
            tail = [Word("-exec", "-exec"), *words, Word("{}", "{}"), Word("+", "+")]
            out.append(
                Invocation(
                    [*find.argv, *extra, *tail],
                    env=dict(find.env),
                    upstream=list(find.upstream),
                    via=[*via, "find | xargs"],
                    cwd=find.cwd,
                )
            )
    return out
