"""Shell command text handed over from inside other languages: interpreter one-liners (`os.system("...")`,
backticks, `execSync`) and awk programs (`system("rm -rf " ENVIRON["HOME"])`, `print | "sh"`)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from functools import lru_cache

from frontdesk.guard.codedelete import code_deletions, read_spans
from frontdesk.guard.words import Invocation, Word

__all__ = [
    "shell_strings",
    "unread_code",
    "awk_commands",
    "sed_commands",
    "later_commands",
    "cron_commands",
    "make_recipes",
    "gdb_commands",
    "LATER",
]


@lru_cache(maxsize=16)
def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern compiled on first use: the hook's cold start pays only for the ones a command needs."""
    return re.compile(pattern, flags)


# Shell commands inside interpreter code: os.system("..."), subprocess.run("...", shell=True), `...`.
_SHELL_OUT_RX: tuple[str, int] = (
    r"""(?:\bsystem|\bpopen|\bexecute|\bexec(?:Sync)?|\bspawnSync|check_output|check_call|\bcall|\brun|Popen|getoutput|"""
    r"""getstatusoutput|%x)\s*[\(\{]\s*[rbf]?(["'])((?:\\.|(?!\1).)*)\1|`([^`]+)`|%x\{([^}]*)\}""",
    re.S,
)


# An argv list handed to exec: subprocess.run(["rm", "-rf", path]), os.execvp("rm", ["rm", ...]), spawn(...).
_ARGV_CALL_RX = (
    r"(?:\brun|\bcall|check_call|check_output|Popen|\bexecv\w*|\bspawn\w*|execFile\w*)\s*\(\s*"
    r"(?:(?P<q>['\"])(?P<prog>[^'\"]+)(?P=q)\s*,\s*)?(?:[^\[()]*,)?\s*\[(?P<list>(?:[^\[\]]|\[[^\]]*\])*)\]"
    r"|\b(?:system|exec)\s*\(?\s*(?P<perl>(?:'[^']*'|\"[^\"]*\")\s*,[^;)]*)"  # perl: system "rm", "-rf", $ENV{HOME}
)
# One argv element: a string literal, or an environment variable ($ENV{X}, os.environ["X"], process.env.X).
_LITERAL = re.compile(
    r"""\s*(?:'([^'\\]*)'|"([^"\\]*)"|\$ENV\{(\w+)\}|os\.environ\[["'](\w+)["']\]|process\.env\.(\w+)"""
    r"""|ENV\[["'](\w+)["']\])\s*(?:,|$)"""
)
_JOINED = re.compile(r"""(['"])\s*\+\s*\1""")  # 'r' + 'm -rf ~': one string
# A home written as code in an argv list: read as the HOME variable it is (`["rm", "-rf", Path.home()]`).
_HOME_EXPR = re.compile(
    r"""(?:__import__\(\s*['"]os['"]\s*\)|os)\.path\.expanduser\(\s*['"]~/?['"]\s*\)"""
    r"""|(?:pathlib\.)?Path\.home\(\)|\bos\.homedir\(\)|\bDir\.home\b"""
)


def _unescape(text: str) -> str:
    """A string literal's text as the program hands it on: `\\\\` is `\\`, `\\"` is `"`, `\\n` a newline,
    `\\u200b` the character (Python, Perl, JavaScript and Lisp escapes alike)."""
    if "\\" not in text:
        return text
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text.replace('\\"', '"').replace("\\'", "'").replace("\\\\", "\\")


def shell_strings(code: str) -> list[str]:
    """Literal shell command strings handed to a shell from interpreter (or awk) code."""
    if not code:
        return []
    code = _JOINED.sub("", code)
    out = []
    for m in _rx(*_SHELL_OUT_RX).finditer(code):
        text = m.group(2) or m.group(3) or m.group(4)
        if text and (" " in text or "/" in text or _rx(r"[a-z][\w.+-]*").fullmatch(text)):  # os.system("reboot")
            out.append(_unescape(text))
    for m in _rx(_ARGV_CALL_RX).finditer(code):
        inside = _HOME_EXPR.sub('os.environ["HOME"]', m.group("list") or m.group("perl") or "")
        items = _LITERAL.findall(inside)
        # a literal is quoted; an environment variable stays ${X}, which the inner parse expands
        words = [shlex.quote(a or b) if (a or b) else "${" + "".join(env) + "}" for a, b, *env in items]
        prog = m.group("prog")
        if prog and words and words[0] != shlex.quote(prog):  # spawn("rm", ["-rf", x]): the list has no argv0
            words.insert(0, shlex.quote(prog))
        if len(words) > 1 and _all_literal(inside, len(items)):
            out.append(" ".join(words))
    out.extend(_lisp_and_trees(code))
    return out[:8]


# A whole shell command handed over as one plain literal (no f-string, %, {} or concatenation): read entirely.
_WHOLE_SHELL_OUT = (
    r"""\b(?:os\.system|os\.popen|subprocess\.(?:run|call|check_call|check_output|getoutput|Popen))\s*\(\s*"""
    r"""(["'])(?:\\.|(?!\1)[^{}%`\\])*\1(?=\s*[,)])"""
)


@lru_cache(maxsize=64)
def unread_code(code: str) -> str:
    """The code with what the guard read as shell blanked out (`shutil.rmtree("build")`, `os.system("rm -rf
    build")`): what a `code_regex` rule still has to judge, so the same deletion gets the shell's decision."""
    spans = sorted([(a, b) for a, b, _ in read_spans(code)] + [m.span() for m in _rx(_WHOLE_SHELL_OUT).finditer(code)])
    if not spans:
        return code
    parts, last = [], 0
    for start, end in spans:
        if start >= last:
            parts += [code[last:start], " " * (end - start)]
            last = end
    return "".join(parts) + code[last:]


# Lisp (emacs --eval): (shell-command "CMD"), (call-process-shell-command "CMD"), (call-process "rm" nil nil nil ...)
_LISP_SHELL = (
    r"""\((?:async-)?shell-command(?:-to-string)?\s+"((?:\\.|[^"\\])*)"|"""
    r"""\((?:call|start)-process-shell-command\s+(?:"[^"]*"\s+\S+\s+)?"((?:\\.|[^"\\])*)"|"""
    r"""\((?:call-process|process-file|process-lines)\s+"([^"]+)"((?:\s+(?:nil|t|"[^"]*"))*)"""
)


def _lisp_and_trees(code: str) -> Iterator[str]:
    """Shell commands in Lisp forms, and deletions in any interpreter's code, as shell text."""
    if "(" not in code:
        return
    if "-process" in code or "shell-command" in code:
        for m in _rx(_LISP_SHELL).finditer(code):
            if m.group(1) or m.group(2):
                yield _unescape(m.group(1) or m.group(2))
            elif m.group(3):
                args = [a for a in re.findall(r'"([^"]*)"', m.group(4) or "")]
                yield " ".join(shlex.quote(w) for w in [m.group(3), *args])
    yield from code_deletions(code)  # shutil.rmtree("build"), a home's entries each deleted (codedelete.py)


def _all_literal(inside: str, count: int) -> bool:
    return len([p for p in inside.split(",") if p.strip()]) == count


def awk_commands(inv: Invocation, code: Callable[[str, str], Invocation]) -> Iterator[Invocation]:
    """awk 'BEGIN{system("...")}': the program is code; system() strings are shell."""
    args = inv.args
    program = None
    assigned: dict[str, str] = {}
    i = 0
    while i < len(args):
        t = args[i].text
        if t in ("-e", "--source") and i + 1 < len(args):
            program = args[i + 1].text
            break
        if t in ("-f", "-v", "-F", "--file", "--assign", "--field-separator"):
            if t in ("-v", "--assign") and i + 1 < len(args) and "=" in args[i + 1].text:
                name, _, value = args[i + 1].text.partition("=")
                assigned[name] = value
            i += 2
            continue
        if not t.startswith("-"):
            program = t
            break
        i += 1
    if program is None:
        return
    for text in shell_strings(program) + _awk_built(program, assigned):
        yield code(text, "awk system")
    for m in re.finditer(r"""\|\s*"([^"]+)"|"([^"]+)"\s*\|\s*getline""", program):
        text = m.group(1) or m.group(2)
        if re.match(r"^\s*(ba|z|da|k|fi)?sh\b", text):  # print | "sh": awk's output is the shell's code
            yield Invocation([Word("sh", "sh")], upstream=[inv.program], via=inv.via + ["awk |"], cwd=inv.cwd)
        else:
            yield code(text, "awk pipe")
    for m in re.finditer(r'>>?\s*"(/[^"]+)"', program):  # print > "/etc/cron.d/x": awk writes that file
        yield Invocation([], redirects=[(">", Word(m.group(1), m.group(1)))], via=inv.via + ["awk >"], cwd=inv.cwd)


_AWK_CALL = re.compile(r"\bsystem\s*\(((?:\"(?:\\.|[^\"\\])*\"|[^()\"])*)\)")
_AWK_PART = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|ENVIRON\[\s*"(\w+)"\s*\]|(\$?\w+))\s*')


def _awk_built(program: str, assigned: dict[str, str]) -> list[str]:
    """system("rm -rf " ENVIRON["HOME"]), system("rm -rf " d) with -v d=...: the command awk builds by
    concatenation. What awk reads at run time (fields, getline) is a plain placeholder word."""
    out = []
    for m in _AWK_CALL.finditer(program):
        parts = _AWK_PART.findall(m.group(1))
        if len(parts) < 2 or not any(lit for lit, _, _ in parts):
            continue
        text = ""
        for literal, env_name, name in parts:
            if literal or not (env_name or name):
                text += literal.replace('\\"', '"')
            elif env_name:
                text += "${" + env_name + "}"  # the inner parse expands it with the command's environment
            else:
                text += assigned.get(name, "awk-value")
        out.append(text)
    return out[:8]


# GNU sed: `e CMD` runs CMD, `e` and `s///e` run the pattern space, `w FILE` and `s///w FILE` write FILE.
_SED_ADDR = r"(?:[\d$]+(?:,[\d$+~]+)?|/(?:\\.|[^/])*/(?:,[\d$]+|,/(?:\\.|[^/])*/)?)?!?\s*"
_SED_EXEC_RX = r"^\s*" + _SED_ADDR + r"e(?:\s+(.*))?$"
_SED_WRITE_RX = r"^\s*" + _SED_ADDR + r"[wW]\s+(\S.*)$"
_SED_SUBST_RX = r"^\s*" + _SED_ADDR + r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([gpiIemM0-9]*)(?:w\s*(\S+))?"


def sed_commands(inv: Invocation, code: Callable[[str, str], Invocation]) -> Iterator[Invocation]:
    """The shell commands a sed script runs and the files it writes (`sed '1e rm -rf /'`, `s/a/b/e`)."""
    args = inv.args
    scripts: list[str] = []
    i = 0
    while i < len(args):
        t = args[i].text
        if t in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1].text)
            i += 2
        elif t.startswith("--expression="):
            scripts.append(t.partition("=")[2])
            i += 1
        elif t in ("-f", "--file", "-l", "--line-length"):
            i += 2
        elif t.startswith("-") or scripts:
            i += 1
        else:
            scripts.append(t)
            break
    via = inv.via + ["sed"]
    for piece in (p for script in scripts for p in re.split(r"[;\n]", script)):
        m = _rx(_SED_EXEC_RX).match(piece)
        if m and m.group(1):
            yield code(m.group(1), "sed e")
        elif m or ((sub := _rx(_SED_SUBST_RX).match(piece)) and "e" in sub.group(2)):
            # the pattern space is run as a command: text this line does not show
            yield Invocation([Word("sh", "sh")], upstream=[*inv.upstream, inv.program], via=via, cwd=inv.cwd)
        target = (
            (w := _rx(_SED_WRITE_RX).match(piece))
            and w.group(1)
            or (sub := _rx(_SED_SUBST_RX).match(piece))
            and sub.group(3)
        )
        if target:
            yield Invocation([], redirects=[(">", Word(target, target))], via=via, cwd=inv.cwd)


# Programs that keep shell code to run later, on a signal or on a key press: alias values, at/batch/crontab
# bodies, trap handlers, vim :!, git config commands, Tcl/expect exec and spawn, make recipes fed on stdin.
LATER = frozenset(
    (
        "alias",
        "at",
        "batch",
        "crontab",
        "trap",
        "vim",
        "vi",
        "nvim",
        "ex",
        "view",
        "git",
        "expect",
        "tclsh",
        "wish",
    )
    + ("make", "gmake")
)
_CRON_TIME = re.compile(r"^\s*(@\w+|(\S+\s+){4}\S+)\s+(.*)$")
_EX_BANG = re.compile(r"^\s*:?\s*!")


def cron_commands(table: str) -> str:
    """The commands of a crontab (`0 3 * * * CMD`, `@reboot CMD`), one a line; settings lines dropped."""
    lines = (_CRON_TIME.match(x) for x in table.splitlines() if x.strip()[:1] not in ("", "#"))
    return "\n".join(m.group(3) for m in lines if m and "=" not in m.group(1))


def later_commands(inv: Invocation, code: Callable[[str, str], Invocation]) -> Iterator[Invocation]:
    """`alias ls='rm -rf ~'`, `at now <<< CMD`, `echo '0 3 * * * CMD' | crontab -`, `vim -c ':!CMD'`."""
    prog, args = inv.program, inv.args
    if prog == "alias":
        for w in args:  # the value runs whenever the name is typed
            if "=" in w.text:
                yield code(w.text.partition("=")[2], "alias")
    elif prog in ("at", "batch") and inv.stdin_text is not None:
        yield code(inv.stdin_text, prog)
    elif prog == "crontab" and inv.stdin_text is not None:
        yield code(cron_commands(inv.stdin_text), "crontab")
    elif prog == "trap":
        texts = [w.text for w in args if w.text not in ("--", "-p", "-l", "-P")]
        if len(texts) >= 2 and texts[0] != "-":  # trap 'CODE' EXIT: runs when the signal comes
            yield code(texts[0], "trap")
    elif prog == "git":
        for text in _git_config_code([w.text for w in args]):
            yield code(text, "git config")
    elif prog in ("expect", "tclsh", "wish"):
        yield from _tcl(inv, code)
    elif prog in ("make", "gmake"):
        texts = [w.text for w in args]
        if inv.stdin_text is not None and any(
            t in ("-f-", "-f/dev/stdin", "--file=-", "--file=/dev/stdin")
            or t in ("-f", "--file", "--makefile")
            and texts[i + 1 : i + 2] in ([], ["-"], ["/dev/stdin"])  # the grammar drops `-` before `<<`
            for i, t in enumerate(texts)
        ):
            yield code(make_recipes(inv.stdin_text), "make")
    elif prog not in ("alias", "at", "batch", "crontab"):
        for i, w in enumerate(args):  # vim -c ':!CMD', vim '+!CMD', nvim --cmd: an ex command
            given = w.text in ("-c", "--cmd") and i + 1 < len(args)
            text = args[i + 1].text if given else w.text[1:] if w.text[:1] == "+" else ""
            if _EX_BANG.match(text):
                yield code(_EX_BANG.sub("", text), f"{prog} :!")
            elif text and re.match(_EX_READ, text):  # :r !CMD, :w !CMD, :silent !CMD
                yield code(re.sub(_EX_READ, "", text), f"{prog} :!")
            for inner in shell_strings(text) if "(" in text else ():  # :call system('CMD')
                yield code(inner, f"{prog} system()")


_EX_READ = r"^\s*:?\s*(?:sil(?:ent)?!?\s+|exe(?:cute)?\s+['\"]|r(?:ead)?\s*|w(?:rite)?\s*)!"


# git settings whose value is a command git runs (`alias.x = !CMD`, core.sshCommand, filters, pagers ...).
_GIT_CODE_KEY = re.compile(
    r"(?i)^(core\.(sshcommand|pager|editor|fsmonitor|askpass)|sequence\.editor|diff\.external|gpg\.program|"
    r"pager\.[\w.-]+|filter\.[\w.-]+\.(clean|smudge|process)|diff\.[\w.-]+\.(textconv|command)|"
    r"merge\.[\w.-]+\.driver|remote\.[\w.-]+\.(uploadpack|receivepack)|uploadpack\.packobjectshook)$"
)
_GIT_BANG_KEY = re.compile(r"(?i)^(alias\.[\w.-]+|credential(\.[^=]+)?\.helper)$")


def _git_config_code(texts: list[str]) -> Iterator[str]:
    """Commands in `git -c KEY=VALUE ...` and `git config [--global] KEY VALUE`."""
    pairs: list[tuple[str, str]] = []
    for i, t in enumerate(texts):
        if t == "-c" and i + 1 < len(texts) and "=" in texts[i + 1]:
            key, _, value = texts[i + 1].partition("=")
            pairs.append((key, value))
    if "config" in texts:
        rest = [t for t in texts[texts.index("config") + 1 :] if not t.startswith("-")]
        if len(rest) >= 2:
            pairs.append((rest[0], rest[1]))
    for key, value in pairs:
        if _GIT_CODE_KEY.match(key) and value.strip():
            yield value
        elif _GIT_BANG_KEY.match(key) and value.startswith("!"):
            yield value[1:]


_TCL_EXEC = re.compile(r"(?:^|[;\[{\n])\s*(?:exec|spawn|system)\s+((?:-\S+\s+)*)([^;\]}\n]+)")


def _tcl(inv: Invocation, code: Callable[[str, str], Invocation]) -> Iterator[Invocation]:
    """expect/tclsh code (`-c CODE`, stdin): `exec CMD ARGS` and `spawn CMD ARGS` run a program."""
    texts = [w.text for w in inv.args]
    scripts = [texts[i + 1] for i, t in enumerate(texts[:-1]) if t == "-c"]
    if inv.stdin_text is not None:
        scripts.append(inv.stdin_text)
    for script in scripts:
        for m in _TCL_EXEC.finditer(script):
            yield code(m.group(2).strip(), f"{inv.program} exec")


def make_recipes(makefile: str) -> str:
    """The shell lines of a makefile's recipes (tab-indented; `@`, `-`, `+` prefixes and `$$` undone)."""
    out = []
    for line in makefile.splitlines():
        if line.startswith("\t"):
            out.append(line.lstrip("\t").lstrip("@-+ ").replace("$$", "$"))
    return "\n".join(out)


_GDB_SHELL = re.compile(r"^\s*(?:shell\b|!|pipe\b[^|]*\|)\s*(.+)$", re.S)


def gdb_commands(inv: Invocation, code: Callable[[str, str], Invocation]) -> Iterator[Invocation]:
    """`gdb -ex 'shell CMD'`, `-ex '!CMD'`, `--eval-command=...`: gdb hands CMD to a shell."""
    texts = [w.text for w in inv.args]
    values = [texts[i + 1] for i, t in enumerate(texts[:-1]) if t in ("-ex", "-iex", "--ex", "--eval-command")]
    values += [t.partition("=")[2] for t in texts if t.startswith(("--eval-command=", "-ex="))]
    for value in values:
        m = _GDB_SHELL.match(value)
        if m:
            yield code(m.group(1), "gdb shell")
