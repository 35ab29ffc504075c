"""The words and simple commands the shell front end produces (plain data, no parsing here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["DYNAMIC", "SHELLS", "Word", "Invocation", "Parsed", "basename"]

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "ash"})
"""Shells: they run `-c CODE`, a script named after them, or their stdin."""

DYNAMIC = "\x00dyn"  # the value of a variable that is set but unknown here (a loop variable, `read`)


@dataclass
class Word:
    """One shell word: `text` as the shell would expand it (best effort), `raw` as written."""

    text: str
    raw: str
    unset_vars: tuple[str, ...] = ()
    leading_unset: bool = False
    dynamic: bool = False
    subst_programs: tuple[str, ...] = ()
    found: tuple[Word, ...] = ()
    """The argv of the `find` whose output this word is (`rm -rf $(find ~ -name X)`), read as `find ... -exec`."""

    @property
    def is_flag(self) -> bool:
        """Whether this word looks like an option."""
        return self.text.startswith("-") and len(self.text) > 1


@dataclass
class Invocation:
    """One simple command the shell line would run."""

    argv: list[Word]
    env: dict[str, str] = field(default_factory=dict)
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    upstream: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)
    cwd: str | None = None
    inline_code: str | None = None
    module: str | None = None
    stdin_from: list[str] = field(default_factory=list)
    stdin_text: str | None = None
    """What it reads on stdin when that is known: a heredoc or here-string body, `echo TEXT |`."""
    stdin_partial: bool = False
    """stdin_text is only part of the input: `(crontab -l; echo X) |` also passes on text the line does not show."""
    stdin_lists: str | None = None
    """The directory whose entry names stdin is, one a line (`ls ~ |`): what `xargs -I{} rm -rf ~/{}` fills in."""
    stdin_file: str | None = None
    """The word naming a file the line wrote a listing to, which this command reads (`< F`, `xargs -a F`, `cat F`)."""

    @cached_property
    def program(self) -> str:
        """The basename of argv[0] ('' for a bare assignment)."""
        return basename(self.argv[0].text) if self.argv else ""

    @property
    def args(self) -> list[Word]:
        """The words after the program."""
        return self.argv[1:]


@dataclass
class Parsed:
    """Everything one command line would run, plus whether the parser had to guess."""

    invocations: list[Invocation]
    error: bool
    functions: dict[str, str] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    """Files the line writes with text it shows (`echo CMD > x.sh`), by absolute path: what a later `bash x.sh`
    on the same line runs."""


def basename(path: str) -> str:
    """The program name of an argv[0] (`/usr/bin/rm` → `rm`, `\\rm` → `rm`)."""
    return path.rsplit("/", 1)[-1].lstrip("\\")
