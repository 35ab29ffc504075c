"""Deletions written in interpreter code, read as the shell commands they amount to.

- A whole-tree or one-file deletion of a literal path or a home (`shutil.rmtree("build")`,
  `rmtree($ENV{HOME})`, `os.remove("x.log")`) is `rm -rf PATH` / `rm -f PATH`, judged as the shell's `rm` is
  (`rm -rf build` in the project is fine, `rm -rf ~` is not): the same decision for the same effect.
- A deletion driven by a listing of a home (`for p in Path.home().iterdir(): shutil.rmtree(p)`,
  `os.listdir(os.path.expanduser("~"))`, `glob.glob(os.path.join(home, "*"))`) is `rm -rf ~/*`, as
  `ls ~ | xargs -I{} rm -rf ~/{}` is.
- `read_spans` says where those deletions are, so that shellout.unread_code can blank them out for the
  `code_regex` rules (`interp.delete` asks about a deletion the guard could not read, not one it judged as shell).
Pure functions of the text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from functools import lru_cache

__all__ = ["code_deletions", "read_spans"]

# A home directory written in interpreter code: each is `~` to the shell.
_HOME_EXPR = (
    r"""os\.path\.expanduser\(\s*['"]~['"]\s*\)|(?:pathlib\.)?Path\.home\(\)|os\.environ\[\s*['"]HOME['"]\s*\]|"""
    r"""os\.getenv\(\s*['"]HOME['"]\s*\)|\$ENV\{HOME\}|ENV\[\s*['"]HOME['"]\s*\]|Dir\.home|"""
    r"""(?:require\(\s*['"]os['"]\s*\)|\bos)\.homedir\(\)|Sys\.getenv\(\s*['"]HOME['"]\s*\)|"""
    r"""Deno\.env\.get\(\s*['"]HOME['"]\s*\)|process\.env\.HOME|\(getenv\s+"HOME"\)|path\.expand\(\s*['"]~['"]\s*\)|"""
    r"""Path\(\s*['"]~['"]\s*\)\.expanduser\(\)"""
)
# Code that deletes a whole tree: shutil.rmtree(P), rmtree(P), FileUtils.rm_rf(P), fs.rmSync(P, ...), unlink(P,
# recursive=TRUE), Deno.removeSync(P, ...), (delete-directory P t): read as `rm -rf P` for a literal or a home.
_TREE_DELETE = (
    r"""(?:shutil\.rmtree|\brmtree|\bremove_tree|FileUtils\.(?:rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?)|"""
    r"""\brmSync|\brmdirSync|Deno\.remove(?:Sync)?|\bunlink(?=\s*\([^)]*recursive\s*=\s*T)|"""
    r"""\(delete-directory)\s*\(?\s*(?:(?P<home>"""
    + _HOME_EXPR
    + r""")|'(?P<sq>[^'\\]*)'|"(?P<dq>[^"\\]*)"|\(expand-file-name\s+"(?P<el>[^"\\]*)"\))(?=\s*[,)]|\s+(?:t|nil)\b)"""
)
_LIST_CALL = (
    r"""(?:\bos\.listdir|\bos\.scandir|\bos\.walk|\bglob\.i?glob|\breaddirSync|\breaddir|\bDir\.(?:children|entries|"""
    r"""each_child|glob|foreach)|\blist\.files|\bopendir|\bfs\.readdir)\s*\(\s*(?:my\s+\$\w+\s*,\s*)?"""
)
# Any deletion call (not list.remove or dict.pop: a listing printed and a list edited is no deletion).
_ANY_DELETE = (
    r"""shutil\.rmtree|\brmtree|os\.(?:remove|unlink|rmdir|removedirs)\(|\.unlink\(|\.rmdir\(|\bunlink\b|"""
    r"""FileUtils\.rm|File\.delete|\.(?:rm|rmdir|unlink)(?:Sync)?\(|\bfile\.remove\(|send2trash|\brm -r|['"]rm['"]|"""
    r"""\brm\(.*recursive\s*=\s*true|Deno\.remove|remove_tree|delete-directory"""
)


# One file: os.remove("x"), os.unlink("x"), Path("x").unlink(): `rm -f x` (Path("x") alone deletes nothing).
_FILE_DELETE = (
    r"""\bos\.(?:remove|unlink)\(\s*(?:'(?P<sq>[^'\\]*)'|"(?P<dq>[^"\\]*)")\s*\)|"""
    r"""\bPath\(\s*(?:'(?P<psq>[^'\\]*)'|"(?P<pdq>[^"\\]*)")\s*\)\.unlink\(\s*(?:missing_ok\s*=\s*\w+)?\s*\)"""
)


@lru_cache(maxsize=16)
def _rx(pattern: str) -> re.Pattern[str]:
    """A pattern compiled on first use: the hook's cold start pays only for the ones a command needs."""
    return re.compile(pattern)


def read_spans(code: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, shell text) of each deletion of a literal path or a home the code makes."""
    if "(" not in code:
        return
    for m in _rx(_TREE_DELETE).finditer(code):
        path = "~" if m.group("home") else m.group("sq") or m.group("dq") or m.group("el") or ""
        if path:
            quoted = (
                "~/" + shlex.quote(path[2:]) if path.startswith("~/") else path if path == "~" else shlex.quote(path)
            )
            yield m.start(), m.end(), "rm -rf " + quoted
    for m in _rx(_FILE_DELETE).finditer(code):
        path = m.group("sq") or m.group("dq") or m.group("psq") or m.group("pdq") or ""
        if path and not path.startswith("~"):  # Python does not expand ~: a file named so, left to the rule
            yield m.start(), m.end(), "rm -f " + shlex.quote(path)


def _home_listing(code: str) -> int | None:
    """Where the code lists the entries of a home (a home expression or a name bound to one), else None."""
    names = {m.group(1) for m in re.finditer(r"(\$?\b\w+)\s*=\s*(?:" + _HOME_EXPR + ")", code)}
    home = "(?:" + _HOME_EXPR + "".join("|" + re.escape(n) + r"\b" for n in sorted(names)[:8]) + ")"
    patterns = (
        _LIST_CALL + home + r"\s*[,)]",  # os.listdir(home), readdirSync(os.homedir()), Dir.children(Dir.home)
        home + r"\s*\.\s*(?:iterdir|glob|rglob|children|entries)\s*\(",  # Path.home().iterdir()
        r"""(?:join\(\s*""" + home + r"""\s*,\s*|expanduser\(\s*)['"]~?/?\*['"]""",  # join(home, "*"), ~/*
        r"""['"]#\{\s*""" + home + r"""\s*\}/\*['"]|f['"]\{\s*""" + home + r"""\s*\}/\*['"]""",  # "#{Dir.home}/*"
    )
    found = [m.start() for p in patterns if (m := re.search(p, code))]
    return min(found) if found else None


def code_deletions(code: str) -> list[str]:
    """The shell commands the code's deletions amount to (`rm -rf build`, `rm -rf ~/*` for a listed home)."""
    out = [text for _, _, text in read_spans(code)]
    if "(" in code:
        if _home_listing(code) is not None and _rx(_ANY_DELETE).search(code):  # (a comprehension: deletes first)
            out.append("rm -rf ~/*")
    return out[:8]
