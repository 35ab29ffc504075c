"""How the shell walker reads one word: quoting, `~`, variables expanded against the known environment
(`${X:-d}` and friends), and the command substitutions inside it (walked as statements of their own).

`WordReader` holds the state words are read against; `shell._Walker` adds the statements. Nothing here
runs anything or reads files.
"""

from __future__ import annotations

import os
import re
from typing import Any

from frontdesk.guard.shelltext import (
    STATEMENTS,
    Redirect,
    ansi_c,
    brace_words,
    found_of,
    known_output,
    listed_glob,
    listing_of,
    own_commands,
    passes_on,
    unescape,
    unescape_dq,
)
from frontdesk.guard.words import DYNAMIC, Invocation, Word
from frontdesk.guard.wrappers import VAR_RE as _VAR_RE

__all__ = ["WordReader", "fd_of_next"]

_ALL_POSITIONAL = frozenset(('"$@"', "$@", '"${@}"', "${@}", "$*", "${*}"))
_ARRAY_ALL = re.compile(r'"?\$\{(\w+)\[[@*]\]\}"?')


def _brace_source(word: Word) -> str:
    """The text brace expansion works on: the word as written when it is plain; the expanded text when
    the braces stand outside quotes and are no `${...}` (`"$HOME"/{.,}*`); else nothing."""
    if "{" not in word.raw:
        return ""
    if not any(c in word.raw for c in "'\"$`\\"):
        return word.raw
    quote, prev = "", ""
    for ch in word.raw:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "{" and prev != "$":
            return "" if word.dynamic else word.text
        prev = ch
    return ""


def fd_of_next(children: list[Any], k: int) -> bool:
    """Whether node k is a file descriptor number written against the redirection after it (`0<<<`)."""
    nxt = children[k + 1] if k + 1 < len(children) else None
    return nxt is not None and nxt.type.endswith("_redirect") and nxt.start_byte == children[k].end_byte


class WordReader:
    """The source text, the environment and the invocations found so far; reads words and assignments."""

    def __init__(self, env: dict[str, str] | None, cwd: str | None, env_complete: bool = True) -> None:
        self.env = env
        self.env_complete = env_complete
        self.src = b""
        self.cwd = cwd
        self.out: list[Invocation] = []
        self.positional: list[Word] | None = None  # `set -- a b c` earlier on the line: $1 $2 $@
        self.arrays: dict[str, list[Word]] = {}  # `a=(rm -rf ~)` earlier on the line: "${a[@]}"
        self.saved: dict[str, Any] = {}  # files the line wrote what a command printed to (savedlists.Saved)

    def _unsaved(self, invs: list[Invocation]) -> list[Invocation]:
        """A substitution's commands, a reader of a saved listing put back as what made it (savedlists)."""
        return invs

    def _stmt(self, node: Any, depth: int, via: list[str], redirects: list[tuple[str, Word]]) -> None:
        """Walk one statement (a substitution inside a word is one): the walker's."""
        raise NotImplementedError

    def _emit(self, inv: Invocation, depth: int) -> None:
        """Record one simple command (the walker also reads what it runs)."""
        self.out.append(inv)

    def _t(self, node: Any) -> str:
        """The source text of a node, from the real bytes."""
        if node is None:
            return ""
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def _assignment(self, node: Any, depth: int, via: list[str]) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self._t(name_node) if name_node is not None else ""
        if value_node is not None and value_node.type == "array":
            items = [self._word(c, depth, via) for c in value_node.named_children]
            self.arrays[name] = items
            return name, Word(" ".join(w.text for w in items), self._t(value_node), dynamic=True)
        value = self._word(value_node, depth, via) if value_node is not None else Word("", "")
        return name, value

    def _set(self, name: str, value: Word | str) -> None:
        if self.env is None:
            return
        text = value if isinstance(value, str) else (DYNAMIC if value.dynamic else value.text)
        self.env[name] = text

    def _expanded(self, argv: list[Word]) -> list[Word]:
        """Words that become several: `"$@"` after `set --`, `"${a[@]}"` of an array the line set, and brace
        expansion (`{~,/tmp/x}` is two words, `~` among them)."""
        out: list[Word] = []
        for w in argv:
            array = _ARRAY_ALL.fullmatch(w.raw)
            if self.positional is not None and w.raw in _ALL_POSITIONAL:  # set -- rm -rf ~; "$@"
                out.extend(self.positional)
            elif array and array.group(1) in self.arrays:  # cmd=(rm -rf ~); "${cmd[@]}"
                out.extend(self.arrays[array.group(1)])
            elif (braced := brace_words(_brace_source(w))) is not None:
                home = (self.env or {}).get("HOME") or os.environ.get("HOME", "~")
                texts = [home + t[1:] if t == "~" or t.startswith("~/") else t for t in braced]
                out.extend(Word(t, w.raw) for t in texts)
            else:
                out.append(w)
        return out

    def _builtin(self, inv: Invocation) -> None:
        """What a builtin sets for the rest of the line: `set -- a b` ($1 $2 $@) and `mapfile -t a < <(ls ~)` /
        `readarray` (the array: the lines the line shows, or `*` for the entry names of a listed directory)."""
        args, texts = inv.args, [w.text for w in inv.args]
        if inv.program == "set" and args and (texts[0][:1] not in "-+" or "--" in texts):
            self.positional = args[texts.index("--") + 1 :] if "--" in texts else list(args)
        if inv.program not in ("mapfile", "readarray"):
            return
        name, k = "MAPFILE", 0
        while k < len(texts):
            if texts[k] in ("-d", "-n", "-O", "-s", "-u", "-C", "-c"):  # options with a value
                k += 2
                continue
            name = texts[k] if re.fullmatch(r"[A-Za-z_]\w*", texts[k]) else name
            k += 1
        self.arrays.pop(name, None)
        if inv.stdin_text is not None and not inv.stdin_partial:
            self.arrays[name] = [Word(line, line) for line in inv.stdin_text.splitlines() if line][:8]
        elif inv.stdin_lists is not None:
            self.arrays[name] = [Word("*", "*")]  # names: each entry of the listed directory

    def _declaration(self, node: Any, depth: int, via: list[str]) -> None:
        """`export X=1`, `declare -a a=(...)`, `local d=~`: the values are set, the command is emitted."""
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
        self._emit(Invocation(words, env=env, via=list(via), cwd=self.cwd), depth)

    def _redirect(self, node: Any, depth: int, via: list[str], herestring: bool = False) -> Redirect:
        """One redirection: its operator and target, the words the grammar wrongly hung on it
        (`rm -rf 2>/dev/null ~`: `~` is an argument), a heredoc or here-string body, statements after it."""
        out = Redirect()
        op, quoted = "", False
        target: Word | None = None
        for child in node.children:
            if not child.is_named and child.type not in ("(", ")"):
                op = op or child.type
            elif child.type == "heredoc_start":
                quoted = any(c in self._t(child) for c in "'\"\\")  # <<'EOF': the body as written
            elif child.type in ("heredoc_end", "file_descriptor"):
                continue
            elif child.type == "heredoc_body":  # <<EOF: `\$X` reaches the reader as `$X` (`bash -s <<EOF`)
                body = self._t(child)
                out.stdin_text = body if quoted else re.sub(r"\\([$`\\])|\\\n", r"\1", body)
            elif child.type in STATEMENTS:
                out.tails.append(child)
            elif child.is_named:
                before = len(self.out)
                word = self._word(child, depth, via)
                if target is None and child.type == "process_substitution" and op == "<":
                    # `bash < <(echo X)`: stdin is what the substitution prints, when the line shows it
                    own = own_commands(self.out[before:], via)
                    texts = [passes_on(inv) for inv in own]
                    if texts and None not in texts:
                        out.stdin_text = "".join(t or "" for t in texts)
                    else:
                        out.stdin_from.extend(inv.program for inv in self.out[before:] if inv.program)
                        out.stdin_lists = listing_of(own, self.cwd)  # < <(ls ~ | grep -v keep)
                if target is None:
                    target = word
                else:
                    out.words.append(word)
        herestring = herestring or node.type == "herestring_redirect"
        if target is not None:
            out.reds.append(("<<<" if herestring else op, target))
            if herestring and target.dynamic:
                out.stdin_from.extend(target.subst_programs)  # `bash <<< $(X)`: code only X knows
            elif herestring:
                out.stdin_text = target.text + "\n"
        return out

    def _word(self, node: Any, depth: int, via: list[str]) -> Word:
        parts: list[tuple[str, str | None, bool]] = []  # (text, unset var name, dynamic)
        before = len(self.out)
        self._collect(node, depth, via, parts, quoted=False)
        subst = tuple(inv.program for inv in self.out[before:] if inv.program)
        text = "".join(p[0] for p in parts)
        unset = tuple(p[1] for p in parts if p[1])
        leading = bool(parts) and parts[0][1] is not None
        dynamic = any(p[2] for p in parts)
        subs = self._unsaved(self.out[before:]) if dynamic and len(parts) == 1 else []
        found = found_of(subs, via) if any(inv.program == "find" for inv in subs) else ()
        return Word(text, self._t(node), unset, leading, dynamic, subst, found)

    def _collect(
        self, node: Any, depth: int, via: list[str], parts: list[tuple[str, str | None, bool]], quoted: bool
    ) -> None:
        kind = node.type
        raw = self._t(node)
        if kind == "word" or kind == "number":
            text = unescape(raw) if not quoted else raw
            if text.startswith("~") and not parts:
                home = (self.env or {}).get("HOME") or os.environ.get("HOME", "~")
                if text == "~" or text.startswith("~/"):
                    text = home + text[1:]
            parts.append((text, None, False))
        elif kind == "raw_string":
            parts.append((raw[1:-1], None, False))
        elif kind == "ansi_c_string":
            parts.append((ansi_c(raw[2:-1]), None, False))
        elif kind == "string_content":
            parts.append((unescape_dq(raw), None, False))
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
            before = len(self.out)
            self._stmt(node, depth, via, [])
            only = node.named_children[0] if len(node.named_children) == 1 else None
            if only is not None and only.type == "file_redirect" and self._t(only).startswith("<"):
                target = self._word(only.named_children[-1], depth, via)  # `$(< F)` prints F as `$(cat F)` does
                self._emit(Invocation([Word("cat", "cat"), target], via=list(via), cwd=self.cwd), depth)
            subs = self._unsaved(self.out[before:])  # `$(cat l)` after `ls -d ~/* > l`: `$(ls -d ~/*)`
            known = known_output(subs, self.cwd, via) if kind == "command_substitution" else None
            unset = [n for inv in subs if known is not None for w in inv.args for n in w.unset_vars]
            if known is None and kind == "command_substitution":  # `rm -rf $(ls -d ~/* | grep -v x)`: ~/*
                known = listed_glob(subs, self.cwd, via)
            # $(echo rm) is rm; $(echo $NOPE) is empty, and NOPE unset (`rm -rf $(echo $NOPE)/` is rm -rf /)
            parts.append((known, unset[0] if unset else None, False) if known is not None else (raw, None, True))
        elif kind == "arithmetic_expansion":
            stack = list(node.named_children)
            while stack:
                child = stack.pop()
                if child.type == "command_substitution":
                    self._stmt(child, depth, via, [])
                else:
                    stack.extend(child.named_children)
            parts.append((raw, None, True))
        else:
            parts.append((raw, None, bool(node.named_children)))

    def _expansion(self, node: Any, raw: str) -> tuple[str, str | None, bool]:
        m = re.match(r"^\$\{([#!]?)([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(.*)\}$", raw, re.DOTALL)
        if not m:
            return raw, None, True
        prefix, name, op = m.groups()
        target = (self.env or {}).get(name, "") if prefix == "!" and op[:1] not in ("*", "@") else ""
        if _VAR_RE.match(target):  # h=HOME; ${!h}: the variable h names
            return self._lookup(target, op or None, raw)
        if prefix:
            return raw, None, True
        return self._lookup(name, op, raw)

    def _lookup(self, name: str, op: str | None, raw: str) -> tuple[str, str | None, bool]:
        if name.isdigit() and name != "0" and self.positional is not None and not op:  # after `set -- a b`
            known = self.positional[int(name) - 1 : int(name)]
            return (known[0].text, None, known[0].dynamic) if known else ("", "$" + name, False)
        if not _VAR_RE.match(name):
            return ("$" + name, None, True)  # $1, $@, $?: known only at run time
        if self.env is None:
            return ("$" + name, None, True)
        value = self.cwd if name == "PWD" and self.cwd else self.env.get(name)  # the shell keeps PWD = cwd
        if value == DYNAMIC or (value is None and not self.env_complete):
            return ("$" + name, None, True)
        op = op or ""
        if op.startswith((":?", "?")):
            return (value or "", None, not value)  # the shell stops when it is unset: safe
        if op.startswith((":-", "-", ":=", "=")):
            default = op[2:] if op.startswith(":") else op[1:]
            if value:
                return (value, None, False)
            ref = re.fullmatch(r"\$\{?([A-Za-z_]\w*)\}?(/[^$`]*)?", default)
            if ref:  # ${NOPE:-$HOME}: the default is another variable
                text, unset, dynamic = self._lookup(ref.group(1), None, "")
                return (text + (ref.group(2) or ""), unset, dynamic)
            return (default, None, default.startswith("$"))
        if op.startswith((":+", "+")):  # ${NOPE:+x}: empty when unset (or empty, with the colon)
            alt = op[2:] if op.startswith(":") else op[1:]
            if value is None or (not value and op.startswith(":")):
                return ("", name, False)
            return (alt, None, True) if "$" in alt or "`" in alt else (alt, None, False)
        element = re.fullmatch(r"\[(\d+|@|\*)\]", op)
        if element and name not in self.arrays and value is None:  # ${NOPE[0]}, ${NOPE[@]}: empty
            return ("", name, False)
        if element and name not in self.arrays and element.group(1) in ("0", "@", "*"):
            return (value or "", None if value else name, False)  # a plain variable is its array's element 0
        cut = _removed(value or "", op) if op[:1] in ("%", "#") else None
        if cut is not None:  # ${HOME%/}: a known value with a pattern removed is still known
            return (cut, None, False) if cut else ("", name, False)
        changed = _operated(value or "", op) if op else None
        if changed is not None:  # ${HOME/alice/bob}, ${HOME,,}, ${HOME:0:6}: known too
            return (changed, None, False) if changed else ("", name, False)
        if op:
            return (raw, None, True)  # patterns, indirection: known only at run time
        if not value:
            return ("", name, False)
        return (value, None, False)


def _operated(value: str, op: str) -> str | None:
    """`value` after a replacement (`/pat/rep`, `//pat/rep` with a plain pattern), a case change (`,,` `^^`
    `,` `^`) or a substring (`:OFF` `:OFF:LEN`); None for anything else."""
    m = re.fullmatch(r"(//?)([^*?\[$`\\/]+)/?([^$`]*)", op)
    if m:
        return value.replace(m.group(2), m.group(3), -1 if m.group(1) == "//" else 1)
    cases = {
        ",,": value.lower(),
        "^^": value.upper(),
        ",": value[:1].lower() + value[1:],
        "^": value[:1].upper() + value[1:],
    }
    if op in cases:
        return cases[op]
    m = re.fullmatch(r":\s*(\d+)(?::\s*(\d+))?", op)
    if m:
        start = int(m.group(1))
        return value[start : start + int(m.group(2))] if m.group(2) is not None else value[start:]
    return None


def _removed(value: str, op: str) -> str | None:
    """`value` after `${VAR%pat}`, `%%`, `#`, `##` (shortest/longest suffix/prefix); None for a pattern that
    is not plain text and globs (quotes, expansions: unknown)."""
    import fnmatch

    longest = op[:2] in ("%%", "##")
    pattern = op[2:] if longest else op[1:]
    if any(c in pattern for c in "$`\\\"'("):
        return None
    cuts = range(len(value) + 1)
    if op[0] == "%":  # suffix: the shortest match starts last
        for i in cuts if longest else reversed(cuts):
            if fnmatch.fnmatchcase(value[i:], pattern):
                return value[:i]
    else:
        for i in reversed(cuts) if longest else cuts:
            if fnmatch.fnmatchcase(value[:i], pattern):
                return value[i:]
    return value
