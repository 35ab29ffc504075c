"""Content from outside: where a command writes what it fetches (`git clone`, `curl -o`, `wget`,
`pip download`), and whether it runs fetched code straight away (`curl URL | bash`).

Pure: works on one parsed `Invocation`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace

from frontdesk.guard import rules as rules_mod
from frontdesk.guard.model import GuardContext
from frontdesk.guard.runs import CODE_RUNNERS
from frontdesk.guard.shell import Invocation

__all__ = ["fetch_targets", "reads_fetched_code", "line_taint"]

_URL = r"^(https?|ftp|git|ssh)://|^git@|^[\w.-]+@[\w.-]+:"
_CLONE_VALUE_FLAGS = (
    "--depth",
    "-b",
    "--branch",
    "-o",
    "--origin",
    "-c",
    "--config",
    "--reference",
    "-j",
    "--jobs",
    "--separate-git-dir",
    "--template",
    "-u",
    "--upload-pack",
    "--shallow-since",
)
"""`git clone` options that take the next word as their value."""


def fetch_targets(inv: Invocation) -> Iterator[tuple[str, str]]:
    """(path, source URL) pairs this invocation will write with content from outside (relative paths)."""
    prog = inv.program
    args = [w.text for w in inv.args]
    urls = [a for a in args if re.match(_URL, a)]
    if prog == "git" and "clone" in args:
        yield from _git_clone(args, inv.cwd)
    elif prog == "curl" and urls:
        yield from _curl(args, urls[0], inv.cwd)
    elif prog == "wget" and urls:
        yield from _wget(args, urls[0], inv.cwd)
    elif prog in ("pip", "pip3") and args[:1] == ["download"]:
        dest = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else "."
        yield (
            _abs(dest, inv.cwd),
            "pip download " + " ".join(a for a in args[1:] if not a.startswith("-"))[:80],
        )
    for op, w in inv.redirects:
        if op in (">", ">>") and prog in ("curl", "wget") and urls:
            yield (_abs(w.text, inv.cwd), urls[0])
    fetcher = next((p for p in inv.upstream if p in _FETCHERS), None)
    if prog == "tee" and fetcher:  # curl URL | tee i.sh: what came from outside, kept
        yield from ((_abs(a, inv.cwd), f"{fetcher} | tee") for a in args if not a.startswith("-"))


_FETCHERS = frozenset(("curl", "wget", "fetch", "aria2c", "http", "https", "httpie"))
_WRITES_FETCHED = frozenset(("git", "curl", "wget", "pip", "pip3", "tee"))  # what fetch_targets reads


def line_taint(invocations: list[Invocation], ctx: GuardContext) -> GuardContext:
    """`ctx` with what the line itself fetches counted as tainted too: `curl URL > i.sh; . ./i.sh`, `wget URL/i.sh
    && bash i.sh`, `git clone URL r && ./r/install.sh` run fetched code as `curl URL | sh` does."""
    writers = [inv for inv in invocations if inv.program in _WRITES_FETCHED]
    fetched = {path: url for inv in writers for path, url in fetch_targets(inv) if path != "/dev/null"}
    if not fetched:
        return ctx
    before = ctx.tainted

    def tainted(path: str) -> str | None:
        path = os.path.normpath(path)
        hit = next((u for p, u in fetched.items() if path == p or path.startswith(p.rstrip("/") + "/")), None)
        return hit or before(path)

    return replace(ctx, tainted=tainted)


def _git_clone(args: list[str], cwd: str | None) -> Iterator[tuple[str, str]]:
    rest: list[str] = []
    skip = False
    for a in args[args.index("clone") + 1 :]:
        if skip:
            skip = False
        elif a in _CLONE_VALUE_FLAGS:
            skip = True
        elif not a.startswith("-"):
            rest.append(a)
    if rest:
        url = rest[0]
        dest = rest[1] if len(rest) > 1 else re.sub(r"\.git$", "", url.rstrip("/").rsplit("/", 1)[-1].split(":")[-1])
        yield (_abs(dest, cwd), url)


def _curl(args: list[str], url: str, cwd: str | None) -> Iterator[tuple[str, str]]:
    for flag in ("-o", "--output"):
        if flag in args and args.index(flag) + 1 < len(args):
            yield (_abs(args[args.index(flag) + 1], cwd), url)
    if "-O" in args or "--remote-name" in args or any(re.match(r"^-[a-zA-Z]*O[a-zA-Z]*$", a) for a in args):
        yield (_abs(url.split("?")[0].rstrip("/").rsplit("/", 1)[-1], cwd), url)


def _wget(args: list[str], url: str, cwd: str | None) -> Iterator[tuple[str, str]]:
    if "-O" in args and args.index("-O") + 1 < len(args) and args[args.index("-O") + 1] != "-":
        yield (_abs(args[args.index("-O") + 1], cwd), url)
    elif "-O" not in args and "-qO-" not in args:
        prefix = args[args.index("-P") + 1] if "-P" in args and args.index("-P") + 1 < len(args) else "."
        yield (_abs(os.path.join(prefix, url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]), cwd), url)


def _abs(path: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd or "/", os.path.expanduser(path)))


def reads_fetched_code(inv: Invocation, fetchers: set[str]) -> bool:
    """Whether the invocation runs as code what one of `fetchers` printed (piped, fed or substituted in)."""
    prog = inv.program
    fed = set(inv.upstream) | set(inv.stdin_from)
    subst = {p for w in inv.args for p in w.subst_programs}
    if not (fed | subst) & fetchers:
        return False
    if prog == "eval" or (not inv.argv and inv.via and inv.via[-1] in ("eval", "bash -c", "sh -c")):
        return True
    if prog in ("source", "."):
        return True
    positional = [w for w in inv.args if not w.is_flag]
    if prog in ("bash", "sh", "zsh", "dash", "ksh", "fish") or rules_mod.rx(CODE_RUNNERS).match(prog):
        if inv.inline_code is not None or any(
            w.is_flag and not w.text.startswith("--") and ("c" in w.text or "e" in w.text) for w in inv.args
        ):
            return bool(subst & fetchers)
        if not positional or positional[0].text in ("-", "/dev/stdin"):
            return bool(fed & fetchers)
        return bool(set(inv.stdin_from) & fetchers) and positional[0].text == "/dev/fd/63"
    return False
