"""A sweep's `{name}` placeholders filled into shell text so that a value is always literal text. Pure.

Placeholders are found in ONE pass over the template (a value holding `{other}` stays as it is). Where a value
lands decides its quoting: outside quotes it is shell-quoted; inside '...', "..." or $'...' the quote is
closed, the shell-quoted value put in and the quote reopened; in a heredoc body the characters the body expands
(`\\ $ backquote`) are escaped, nothing when its delimiter is quoted. A plain value (ASCII letters, digits and
`@%+=:,./-_`) needs no quoting anywhere and goes in as it is. Where the context cannot be quoted for (inside
backquotes or `${...}`, a heredoc line with a command substitution), any other value is refused (ValueError,
one line). Known limit: a `case` pattern's `)` inside `$(...)` ends the substitution early for this reader.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["PLACEHOLDER", "check_values", "fill_plain", "fill_shell", "shell_text_index"]

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,63})\}")
"""`{name}` in a template: the name rules of a sweep parameter."""
_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "posh"})
_TAKES_ARG = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_WORD_END = frozenset(" \t\n;&|()<>")
_WHERE = {"b": "inside backquotes", "p": "inside ${...}", "hb": "on a heredoc line with a command substitution"}

Show = Callable[[object], str]
_Hole = tuple[str, str, str]
"""A placeholder in a read template: the parameter's name, its context, the heredoc delimiter around it."""


def fill_plain(text: str, point: Mapping[str, object], show: Show) -> str:
    """`{name}` replaced by the value as it is (an argv element no shell reads)."""
    return PLACEHOLDER.sub(lambda m: show(point[m.group(1)]) if m.group(1) in point else m.group(0), text)


def shell_text_index(argv: Sequence[str]) -> int | None:
    """The position of the shell text in `[env X=1] bash -lc TEXT ...` (a shell, options holding `c`), or None."""
    for start, word in enumerate(argv):
        if word.rsplit("/", 1)[-1] not in _SHELLS:
            continue
        has_c, i = False, start + 1
        while i < len(argv) and argv[i][:1] in ("-", "+") and argv[i] not in ("-", "--"):
            opt = argv[i]
            if opt in _TAKES_ARG:
                i += 1
            elif opt.startswith("-") and not opt.startswith("--") and "c" in opt:
                has_c = True
            i += 1
        if i < len(argv) and argv[i] == "--":
            i += 1
        if has_c and i < len(argv):
            return i
    return None


@functools.lru_cache(maxsize=4096)
def _put(value: str, where: str, delim: str = "") -> str:
    """The value as text to insert in context `where` (see the module doc)."""
    if delim and value in delim:  # a heredoc line filled to its delimiter would end it early
        raise ValueError(f"sweep value {value[:40]!r} could end the heredoc {delim[:40]!r} early")
    if value and _PLAIN.fullmatch(value):
        return value
    if where == "u":
        return shlex.quote(value)
    if where == "s":
        return "'" + shlex.quote(value) + "'"
    if where == "d":
        return '"' + shlex.quote(value) + '"'
    if where == "a":
        return "'" + shlex.quote(value) + "$'"
    if where == "hq":
        return value
    if where == "hu":
        return re.sub(r"([\\$`])", r"\\\1", value)
    if not value:
        return value
    raise ValueError(f"sweep value {value[:40]!r} has shell characters and its {{name}} is {_WHERE.get(where, where)}")


class _Reader:
    """One pass over shell text: a stack of contexts (u: unquoted, s/d/a: quotes, b: backquotes, p: ${...})."""

    def __init__(self, text: str, names: frozenset[str]) -> None:
        self.text, self.names = text, names
        self.out: list[str | _Hole] = []
        self.stack: list[list[object]] = [["u", 0, False]]  # kind, open parens, opened by $(
        self.heredocs: list[tuple[str, bool, bool]] = []  # delimiter, quoted, <<- (tabs stripped)

    def run(self) -> tuple[str | _Hole, ...]:
        i = 0
        while i < len(self.text):
            i = self._step(i)
        return tuple(self.out)

    def _fill(self, i: int, where: str) -> int | None:
        m = PLACEHOLDER.match(self.text, i)
        if m is None or m.group(1) not in self.names:
            return None
        self.out.append((m.group(1), where, ""))
        return m.end()

    def _holes(self, text: str, where: str, delim: str = "") -> None:
        """Literal text with its placeholders as holes of one context."""
        at = 0
        for m in PLACEHOLDER.finditer(text):
            if m.group(1) in self.names:
                self.out += [text[at : m.start()], (m.group(1), where, delim)]
                at = m.end()
        self.out.append(text[at:])

    def _step(self, i: int) -> int:
        text, frame = self.text, self.stack[-1]
        kind = str(frame[0])
        end = self._fill(i, kind) if text[i] == "{" else None
        if end is not None:
            return end
        two = text[i : i + 2]
        if kind == "s":
            return self._emit(i, 1, pop=text[i] == "'")
        if kind in ("a", "b") and text[i] == "\\":
            return self._emit(i, 2)
        if kind == "a":
            return self._emit(i, 1, pop=text[i] == "'")
        if kind == "p":
            return self._emit(i, 1, pop=text[i] == "}")
        if kind == "b":
            return self._emit(i, 1, pop=text[i] == "`")
        if text[i] == "\\":
            return self._emit(i, 2)
        if two == "$(":
            return self._emit(i, 2, push=["u", 0, True])
        if two == "${":
            return self._emit(i, 2, push=["p", 0, False])
        if text[i] == "`":
            return self._emit(i, 1, push=["b", 0, False])
        if kind == "d":
            return self._emit(i, 1, pop=text[i] == '"')
        return self._unquoted(i, frame)

    def _unquoted(self, i: int, frame: list[object]) -> int:
        text, ch = self.text, self.text[i]
        if ch == "'" or text[i : i + 2] == "$'":
            n = 1 if ch == "'" else 2
            return self._emit(i, n, push=["s" if n == 1 else "a", 0, False])
        if ch == '"':
            return self._emit(i, 1, push=["d", 0, False])
        if ch == "(":
            frame[1] = int(str(frame[1])) + 1
        elif ch == ")" and int(str(frame[1])) > 0:
            frame[1] = int(str(frame[1])) - 1
        elif ch == ")" and frame[2]:
            return self._emit(i, 1, pop=True)
        elif ch == "#" and (i == 0 or text[i - 1] in _WORD_END):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            self._holes(text[i:end], "u")
            return end
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            return self._heredoc_start(i)
        elif ch == "\n" and self.heredocs:
            self.out.append(ch)
            return self._heredoc_bodies(i + 1)
        return self._emit(i, 1)

    def _emit(self, i: int, n: int, pop: bool = False, push: list[object] | None = None) -> int:
        self.out.append(self.text[i : i + n])
        if pop and len(self.stack) > 1:
            self.stack.pop()
        if push is not None:
            self.stack.append(push)
        return i + n

    def _heredoc_start(self, i: int) -> int:
        m = re.compile(r"<<(-?)[ \t]*([^\s;&|()<>]+)").match(self.text, i)
        if m is None:
            return self._emit(i, 2)
        word = m.group(2)
        quoted = any(c in word for c in "'\"\\")
        self.heredocs.append((re.sub(r"['\"\\]", "", word), quoted, m.group(1) == "-"))
        self.out.append(m.group(0))
        return m.end()

    def _heredoc_bodies(self, i: int) -> int:
        text = self.text
        for delim, quoted, tabs in self.heredocs:
            while i < len(text):
                end = text.find("\n", i)
                end = len(text) if end < 0 else end + 1
                line = text[i:end]
                i = end
                where = "hq" if quoted else ("hb" if "$(" in line or "`" in line else "hu")
                bare = line.rstrip("\n").lstrip("\t") if tabs else line.rstrip("\n")
                self._holes(line, where, delim if _could_be(bare, delim) else "")
                if bare == delim:
                    break
        self.heredocs = []
        return i


def _could_be(line: str, delim: str) -> bool:
    """Whether filling this heredoc line's placeholders could make it its delimiter (its text, in order, in it)."""
    at = 0
    for piece in PLACEHOLDER.split(line)[::2]:
        found = delim.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return PLACEHOLDER.search(line) is not None


@functools.lru_cache(maxsize=16)
def _read(text: str, names: frozenset[str]) -> tuple[str, tuple[_Hole, ...]]:
    """The template read once: a format string (`{0}`, `{1}`... per distinct hole) and its holes, so each of up
    to 10,000 points is filled by one `str.format` (a Python loop over 100 holes x 10,000 points took seconds)."""
    keys: dict[_Hole, int] = {}
    out = []
    for part in _Reader(text, names).run():
        if isinstance(part, str):
            out.append(part.replace("{", "{{").replace("}", "}}"))
        else:
            out.append("{" + str(keys.setdefault(part, len(keys))) + "}")
    return "".join(out), tuple(keys)


def fill_shell(text: str, point: Mapping[str, object], show: Show) -> str:
    """`{name}` replaced in shell text by the value, quoted for where it lands (see the module doc)."""
    if not PLACEHOLDER.search(text):
        return text
    fmt, holes = _read(text, frozenset(point))
    shown = {name: show(value) for name, value in point.items()}
    return fmt.format(*[_put(shown[name], where, delim) for name, where, delim in holes])


def check_values(text: str, values: Mapping[str, Iterable[str]]) -> None:
    """ValueError (one line) when some value cannot be quoted at one of its placeholders in this shell text."""
    if not PLACEHOLDER.search(text):
        return
    for name, where, delim in _read(text, frozenset(values))[1]:
        for value in values[name]:
            _put(value, where, delim)
