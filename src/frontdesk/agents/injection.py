"""Lines of job output that read like instructions to an agent. Pure: text in, verdicts out.

A report carries the tail of a job's output: untrusted text (a job may run code fetched from anywhere
and print anything), delivered into an agent's context. The excerpt is fenced as program output, and
lines that address an agent (to run a command, fetch a URL, change permissions, reveal keys, or to
disregard its instructions) are flagged and counted. Flagging never removes text: the agent still sees
what the job printed, marked for what it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Flag", "flag_line", "flag_lines", "KINDS"]

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "override",
        re.compile(
            r"\b(ignore|disregard|forget|override)\b.{0,40}\b(instructions?|prompts?|rules|guidelines|system)\b"
            r"|\b(you are now|new instructions|system prompt|as an ai\b|dear (ai|agent|assistant|claude|codex))"
            r"|^\s*(assistant|system|user)\s*:",
            re.I,
        ),
    ),
    (
        "run",
        re.compile(
            r"\b(please |now |you (must|should) )?(run|execute|exec|type|paste|enter)\b.{0,20}"
            r"(\bcommand\b|:|`|\$\(|\b(sudo|bash|sh|curl|wget|rm|chmod|touch|python|pip|npm|git)\b)"
            r"|^\s*\$\s+\S|\|\s*(ba|z)?sh\b",
            re.I,
        ),
    ),
    (
        "fetch",
        re.compile(
            r"\b(fetch|download|visit|open|browse|go to|navigate to|curl|wget|clone)\b.{0,40}(https?://|\bwww\.)",
            re.I,
        ),
    ),
    (
        "permissions",
        re.compile(
            r"\bchmod\s+(-R\s+)?[0-7]*7[0-7]*\b|\bchmod\s+\+s\b|\bsudoers\b|--dangerously|\bbypass\b.{0,30}"
            r"\b(permission|sandbox|approval|guard|hook)s?\b|\b(allow|grant|enable)\b.{0,20}\b(all|every)\b"
            r".{0,20}\b(tools?|commands?|permissions?)\b|\bsettings\.json\b",
            re.I,
        ),
    ),
    (
        "secrets",
        re.compile(
            r"\b(print|show|reveal|send|post|upload|paste|cat|echo|share|email|leak|exfiltrate)\b.{0,40}"
            r"(api[_ -]?keys?|tokens?|secrets?|passwords?|credentials?|\.ssh\b|id_rsa|id_ed25519|\.env\b|\.netrc"
            r"|aws_secret|private key)",
            re.I,
        ),
    ),
)
KINDS: tuple[str, ...] = tuple(kind for kind, _ in _RULES)


@dataclass(frozen=True)
class Flag:
    """A flagged line of job output: its index in the excerpt and what it reads like."""

    index: int
    kinds: tuple[str, ...]


def flag_line(line: str) -> tuple[str, ...]:
    """The kinds of agent-directed instruction a line reads like (empty when none)."""
    text = line[:2000]
    return tuple(kind for kind, rx in _RULES if rx.search(text))


def flag_lines(lines: Sequence[str]) -> list[Flag]:
    """The flagged lines of an excerpt, in order."""
    out = []
    for i, line in enumerate(lines):
        kinds = flag_line(line)
        if kinds:
            out.append(Flag(i, kinds))
    return out
