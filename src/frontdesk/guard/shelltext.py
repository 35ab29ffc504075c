"""Small pieces of the shell front end: redirection results, loop tags, what a pipeline stage passes on,
and bash's quoting rules for words. Plain functions over text and `Invocation`s."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from frontdesk.guard.lookthrough import LOOK_THROUGH
from frontdesk.guard.words import Invocation, Word

__all__ = [
    "get_parser",
    "split_herestring",
    "only_split_herestrings",
    "listed_dir",
    "keeps_most",
    "stage_lists",
    "listing_of",
    "listed_glob",
    "found_of",
    "found_by_find",
    "STATEMENTS",
    "Redirect",
    "loop_tag",
    "passes_on",
    "find_fed",
    "known_output",
    "unescape",
    "unescape_dq",
    "ansi_c",
    "brace_words",
    "own_commands",
    "through_wrappers",
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
    stdin_lists: str | None = None


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
        text = " ".join(w.text for w in args)
        escapes = any(w.is_flag and "e" in w.text for w in inv.args[: len(inv.args) - len(args)])
        return (ansi_c(text) if escapes else text) + "\n"  # echo -e '\x72m': rm
    if prog == "printf" and args and args[0].text != "-v":
        return _printf(args[0].text, [w.text for w in args[1:]])
    if (prog == "cat" and all(w.text == inv.stdin_file for w in args) or prog == "tee") and not inv.stdin_partial:
        return inv.stdin_text  # tee passes its input on as well as writing it
    if keeps_most(inv) and inv.stdin_text is not None:  # `printf '%s\n' ~/* | grep -v keep |`: nearly all of it
        return inv.stdin_text
    return _listed_paths(inv)


def _listed_paths(inv: Invocation) -> str | None:
    """The paths a stage prints, one a line, when they are the entries of a directory or a glob written on the
    line: `ls -d ~/*` (its words), and `sed 's|^|DIR/|'` or `awk '{print "DIR/" $0}'` after a listing of DIR."""
    prog, args = inv.program, inv.args
    if prog == "ls" and args and not inv.redirects:
        flags = [w.text for w in args if w.is_flag]
        if flags and all(re.fullmatch(r"-[1dA]*d[1dA]*", f) for f in flags) and len(flags) == 1:
            words = [w.text for w in args if not w.is_flag]
            return "".join(w + "\n" for w in words) if words and not any(w.dynamic for w in args) else None
        return None
    args = [w for w in args if w.text != inv.stdin_file]  # `sed 's|^|DIR/|' F` of a saved listing
    if inv.stdin_lists is None or prog not in ("sed", "awk") or len(args) != 1 or args[0].dynamic:
        return None
    code = args[0].text
    if prog == "sed":  # s|^|DIR/|
        m = re.fullmatch(r"s(.)\^\1([^\\]+?)/?\1g?", code)
        prefix = m.group(2) if m else None
    else:  # {print "DIR/" $0}
        m = re.fullmatch(r"""\{\s*print\s+"([^"\\]+?)/?"\s*\$[01]\s*;?\s*\}""", code)
        prefix = m.group(1) if m else None
    if prefix is None or posixpath.normpath(posixpath.join(inv.cwd or ".", prefix)) != inv.stdin_lists:
        return None
    return inv.stdin_lists + "/*\n"  # every entry of the listed directory, as a path


_LS_FLAGS = r"-[1aAUfrtSXvcuBGNh]+|--(all|almost-all|reverse|ignore-backups|group-directories-first|sort=\w+|time=\w+)"


def listed_dir(inv: Invocation, cwd: str | None) -> str | None:
    """The directory whose entry names `ls [DIR]` prints, one a line (not `ls -d`, `-l`, `-R` or several dirs)."""
    if inv.program != "ls" or inv.redirects:
        return None
    dirs = [w for w in inv.args if not re.fullmatch(_LS_FLAGS, w.text)]
    if len(dirs) > 1 or any(w.dynamic or w.unset_vars or w.is_flag or "*" in w.text for w in dirs):
        return None
    text = dirs[0].text if dirs else "."
    return posixpath.normpath(posixpath.join(inv.cwd or cwd or ".", text))


_ORDERERS = frozenset({"sort", "uniq", "tac", "cat"})
_GREPS = frozenset({"grep", "egrep", "fgrep", "rg"})


def keeps_most(inv: Invocation) -> bool:
    """A filter that passes on all, or all but a few, of the lines it reads: `grep -v PAT` (the names it leaves
    out), sort, uniq, tac, `tail -n +K`, `head -n -K`. A listing it filters still lists (nearly) every entry."""
    prog, args = inv.program, [w for w in inv.args if w.text != inv.stdin_file]  # `cat F` of a saved listing
    words = [w.text for w in args]
    if any(w.text != inv.stdin_file for _, w in inv.redirects) or any(w.dynamic for w in args):
        return False
    if prog == "tee":  # passes on all it reads
        return True
    loose = [t for t in words if not t.startswith(("-", "+"))]
    if prog in _ORDERERS:
        return not loose
    if prog in _GREPS:
        inverted = any(t == "--invert-match" or re.fullmatch(r"-[a-zA-Z]*v[a-zA-Z]*", t) for t in words)
        return inverted and len(loose) <= 1 and not any(re.fullmatch(r"-[a-zA-Z]*[oclLqm][a-zA-Z]*", t) for t in words)
    joined = " ".join(words)
    if prog == "tail":  # all but the first K-1 lines
        return bool(re.fullmatch(r"(-n ?|--lines=|)\+\d+", joined))
    if prog == "head":  # all but the last K lines
        return bool(re.fullmatch(r"(-n ?|--lines=)-\d+", joined))
    return False


def stage_lists(own: list[Invocation], before: str | None, cwd: str | None) -> str | None:
    """The directory whose entries a pipeline stage prints: `ls DIR`, or a filter that keeps most of what the
    stage before it listed (`ls ~ | grep -v keep`: still every entry of ~ but one)."""
    if len(own) != 1:
        return None
    before = before if before is not None else own[0].stdin_lists  # `cat l |`, `sort < <(ls ~) |`
    return listed_dir(own[0], cwd) or (before if before is not None and keeps_most(own[0]) else None)


def listing_of(invs: list[Invocation], cwd: str | None) -> str | None:
    """The directory a command substitution lists (`$(ls ~)`, `$(ls ~ | grep -v keep | sort)`), else None."""
    if not invs or not all(keeps_most(inv) for inv in invs[1:]):
        return None
    return listed_dir(invs[0], cwd)


_FIND_DEPTH = frozenset({"-maxdepth", "-mindepth"})


def listed_glob(invs: list[Invocation], cwd: str | None, via: list[str]) -> str | None:
    """What `$(...)` prints when it lists the entries of a directory, as the glob of them all, through filters
    that keep (nearly) every line: `$(ls -d ~/* | grep -v keep)` is `/home/alice/*`, `$(ls)` in the listed
    directory `*`, `$(find ~ -mindepth 1 -maxdepth 1)` `/home/alice/*` (without -mindepth, ~ itself too). None
    for anything else (`$(find ~ -name X)` picks: found_by_find reads it as the find -exec it amounts to)."""
    own = [inv for inv in invs if inv.argv and inv.via == via]
    if not own or any(inv.redirects for inv in own) or not all(keeps_most(inv) for inv in own[1:]):
        return None
    first, here = own[0], posixpath.normpath(own[0].cwd or cwd or ".")
    words = [w for w in first.args if not w.is_flag]
    if any(w.dynamic or w.unset_vars for w in first.args):
        return None
    if first.program == "ls":
        listed = listed_dir(first, cwd)
        if listed is not None:
            return "*" if listed == here else None  # names, relative to the working directory
        short = "".join(w.text[1:] for w in first.args if w.is_flag and not w.text.startswith("--"))
        if "d" in short and len(words) == 1 and words[0].text.endswith("/*"):
            return words[0].text  # `ls -d DIR/*`: the glob's paths
        return None
    if first.program != "find" or len(words) < 1 or first.args[0] is not words[0]:
        return None
    rest = [w.text for w in first.args[1:]]
    pairs = list(zip(rest[::2], rest[1::2], strict=False))
    if len(rest) % 2 or not all(flag in _FIND_DEPTH and value.isdigit() for flag, value in pairs):
        return None  # `$(find ~ -name X)` picks: read as find -exec (found_by_find)
    root = posixpath.normpath(posixpath.join(here, words[0].text))
    return root + "/*" if dict(pairs).get("-mindepth", "0") != "0" else root


def _printf(fmt: str, values: list[str]) -> str:
    """printf's output: escapes in the format decoded (`printf '\\x72m'` is rm), `%s` values as they are,
    `%b` values decoded; the format is used again while values are left, as printf does."""
    pieces = re.split(r"(%[-0-9.]*[sbdiqc]|%%)", fmt)
    slots = sum(1 for p in pieces[1::2] if p != "%%")
    out = ""
    rest = list(values)
    while True:
        taken, rest = rest[:slots], rest[slots:]
        for k, piece in enumerate(pieces):
            if k % 2 == 0:
                out += ansi_c(piece)
            elif piece == "%%":
                out += "%"
            else:
                value = taken.pop(0) if taken else ""
                out += ansi_c(value) if piece.endswith("b") else value
        if not rest or not slots:
            return out


def known_output(invs: list[Invocation], cwd: str | None, via: list[str]) -> str | None:
    """What `$(...)` prints when the line says: one echo/printf of known words, dirname, basename, pwd
    (`via`: the wrappers the substitution itself runs under, so `bash -c '$(echo rm) -rf ~'` reads too)."""
    if len(invs) != 1 or not invs[0].argv or invs[0].via != via or invs[0].redirects:
        return None
    inv = invs[0]
    args = [w.text for w in inv.args]
    prints = inv.program in ("echo", "printf")  # an unset variable prints nothing: `$(echo $NOPE)` is empty
    if any(w.dynamic for w in inv.args) or any(w.unset_vars for w in inv.args) and not prints:
        return None
    if prints:
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


_BRACES = re.compile(r"\{([^{}]*)\}")
_BRACE_LIMIT = 64


def brace_words(raw: str) -> list[str] | None:
    """The words bash's brace expansion makes of one plain word (`{~,/tmp/x}`, `/{etc,usr}`, `-{r,f}`,
    `x{1..3}`); None when the word has none (or quotes, expansions or escapes: left as they are)."""
    if "{" not in raw or any(c in raw for c in "'\"$`\\"):
        return None
    words = [raw]
    for _ in range(4):  # nested or several groups: a few rounds, bounded
        out: list[str] = []
        changed = False
        for word in words:
            m = next((m for m in _BRACES.finditer(word) if "," in m.group(1) or ".." in m.group(1)), None)
            if m is None:
                out.append(word)
                continue
            inside = m.group(1)
            span = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", inside)
            if span:
                lo, hi = int(span.group(1)), int(span.group(2))
                step = 1 if hi >= lo else -1
                items = [str(n) for n in range(lo, hi + step, step)][:_BRACE_LIMIT]
            else:
                items = inside.split(",")
            out += [word[: m.start()] + item + word[m.end() :] for item in items]
            changed = True
        words = out[:_BRACE_LIMIT]
        if not changed:
            break
    return words if words != [raw] else None


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


def found_of(invs: list[Invocation], via: list[str]) -> tuple[Word, ...]:
    """The argv of a `$(find ROOT ...)` a word is, with `-path {piped}` after it when a filter in between picks
    (`$(find ~ | grep X)`), as find_fed reads `find | grep | xargs`; () for any other substitution."""
    own = [inv for inv in invs if inv.argv and inv.via == via]
    if not own or own[0].program != "find" or any(inv.program == "find" for inv in own[1:]):
        return ()
    picks = not all(keeps_most(inv) for inv in own[1:])
    return (*own[0].argv, *((Word("-path", "-path"), Word("{piped}", "{piped}")) if picks else ()))


def found_by_find(inv: Invocation) -> list[Invocation]:
    """`CMD ... $(find ROOT ...)` as the `find ROOT ... -exec CMD ... {} +` it amounts to (find_fed's reading of
    `find ROOT ... | xargs CMD`), so the rules for find handing its matches to a deleter see the tree."""
    out = []
    for k, word in enumerate(inv.argv[1:], 1):
        if word.found:
            rest = [w for j, w in enumerate(inv.argv) if j != k]
            tail = [Word("-exec", "-exec"), *rest, Word("{}", "{}"), Word("+", "+")]
            out.append(Invocation([*word.found, *tail], env=dict(inv.env), via=[*inv.via, "find | xargs"], cwd=inv.cwd))
    return out


# Wrappers that run their inner command in their own place: in a pipeline the inner command is the stage
# (`sudo find ~ | xargs rm` is `find ~ | xargs rm` run as root; sudo never makes a verdict milder).
_ARGV_WRAPPERS = frozenset(LOOK_THROUGH) | {"sudo", "doas", "run0", "pkexec", "env", "bwrap", "systemd-nspawn"}


def through_wrappers(tags: list[str], via: list[str]) -> bool:
    """Whether an invocation walked under `via` plus only argv wrappers (sudo, nice, timeout ...)."""
    return tags[: len(via)] == via and all(t in _ARGV_WRAPPERS for t in tags[len(via) :])


def own_commands(invs: list[Invocation], via: list[str]) -> list[Invocation]:
    """A pipeline stage's own commands: each wrapper chain by its innermost command."""
    own = [inv for inv in invs if inv.argv and through_wrappers(inv.via, via)]
    wrapped = {tuple(inv.via) for inv in own}
    return [inv for inv in own if (*inv.via, inv.program) not in wrapped]


_PARSER: Any = None


def get_parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        _PARSER = Parser(Language(tree_sitter_bash.language()))
    return _PARSER


def split_herestring(node: Any, text: Any) -> bool:
    """An ERROR node that is the `<<` of a here-string the grammar split after another redirection."""
    nxt = node.next_named_sibling
    return (
        node.type == "ERROR"
        and text(node).strip() == "<<"
        and nxt is not None
        and nxt.type == "file_redirect"
        and text(nxt).startswith("<")
        and nxt.start_byte == node.end_byte
    )


def only_split_herestrings(root: Any, text: Any) -> bool:
    """Whether every parse error in the tree is a here-string split after another redirection."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing or node.type == "ERROR" and not split_herestring(node, text):
            return False
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return True
