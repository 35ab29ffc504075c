"""Find and redact secrets in commands, logs, reports and events.

Stdlib only and compiled once at import, because the report builder calls `redact` on every report.
Redacted text keeps a stable fingerprint (`«redacted:github-token:1f2e3d4c»`, the first 8 hex digits of the
secret's SHA-256) so two mentions of one secret can be matched without revealing it. `redact` never raises.

Rules here cover what `detect-secrets` misses in shell lines (Anthropic and Hugging Face tokens,
`mysql -pPASS`, passwords in URLs) as well as what it finds (AWS, OpenAI, GitHub keys);
`bench/guard_corpus.py` measures both on the same corpus.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Secret", "find_secrets", "redact", "fingerprint", "mask", "remember"]


@dataclass(frozen=True)
class Secret:
    """One secret found in a text: its kind, where it sits, and its fingerprint."""

    kind: str
    start: int
    end: int
    fingerprint: str


def fingerprint(value: str) -> str:
    """The short stable fingerprint of a secret value."""
    import hashlib  # here, not at import: most texts hold no secret

    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def mask(kind: str, value: str) -> str:
    """The replacement text for one secret."""
    return f"«redacted:{kind}:{fingerprint(value)}»"


# (kind, pattern, group holding the secret). Order matters: the more specific prefix first.
_TOKEN_RULES: list[tuple[str, str, int]] = [
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
        0,
    ),
    ("anthropic-key", r"sk-ant-(?:api|admin|sid)?\d*-?[A-Za-z0-9_\-]{20,}", 0),
    # no \b before the prefix: a key glued to a preceding word ("tokensk-proj-...") is still a key;
    # the digit and capital lookaheads keep words such as "disk-usage-report-for-cluster" out
    (
        "openai-key",
        r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]{0,80}\d)(?=[A-Za-z0-9_\-]{0,80}[A-Z])[A-Za-z0-9_\-]{20,}",
        0,
    ),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])", 0),
    ("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})", 0),
    ("gitlab-token", r"gl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_\-]{20,}", 0),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9\-]{10,}", 0),
    ("stripe-key", r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", 0),
    ("google-api-key", r"AIza[0-9A-Za-z_\-]{35}", 0),
    ("aws-access-key", r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])", 0),
    ("jwt", r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),
    ("npm-token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", 0),
    (
        "cli-password",
        r"(?:^|[\s;|&(])(?:curl|http|https)\b[^\n;|&]*?\s(?:-u|--user)[= ]?['\"]?[^\s:'\"$]+:"
        r"([^\s'\"@$][^\s'\"@]*)",
        1,
    ),
    ("wandb-key", r"WANDB_API_KEY=([0-9a-f]{40})\b", 1),
    # the user may be empty (redis://:pw@host) and the password may hold '@' (the last '@' ends it)
    # literal first (`://`): the regex engine then skips to candidates instead of trying every offset
    ("url-password", r"://[^\s:/@'\"]{0,128}:([^\s/'\"]{1,256})@", 1),
    ("url-token", r"://([A-Za-z0-9_\-]{20,256})@", 1),
    (
        "url-query-secret",
        r"(?i)[?&;](?:access_token|refresh_token|id_token|token|api_?key|key|sig|signature|password|passwd|pwd|"
        r"secret|client_secret|auth|x-amz-signature|x-amz-credential)=([^&\s'\"#]{6,})",
        1,
    ),
    ("bearer-token", r"(?i)\bauthorization:\s*(?:bearer|token|basic)\s+([A-Za-z0-9._~+/=\-]{8,})", 1),
    (
        "cli-password",
        r"(?:^|[\s;|&(])(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n;|&]*?\s-p['\"]?([^\s'\"$-][^\s'\"]*)",
        1,
    ),
    ("cli-password", r"(?:^|[\s;|&(])sshpass\s+-p\s*['\"]?([^\s'\"]+)", 1),
    ("cli-password", r"(?i)--pass(?:word|wd)?[= ]['\"]?([^\s'\"$][^\s'\"]*)", 1),
    (
        "cli-password",
        r"(?:^|[\s;|&(])(?:docker|podman|helm|oras|buildah|skopeo)\s+(?:\S+\s+)?login\b[^\n;|&]*?"
        r"\s-p\s*['\"]?([^\s'\"$-][^\s'\"]*)",
        1,
    ),
    ("wandb-key", r"(?:^|[\s;|&(])wandb\s+login\s+(?:--?\S+\s+)*([0-9a-f]{40})\b", 1),
]

# A key-like name followed by `=` or `:` and a value: masked when the value is long and random enough,
# or whenever the name says password.
_NAME_OK = (
    r"(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|passwd|pwd|(?<![a-z])pass|"
    r"credential|access[_\-]?key|private[_\-]?key|auth[_\-]?key|client[_\-]?secret|"
    r"(?:secret|signing|encryption|master|session|app)[_\-]?key)$"
)
"""The end of a name that says its value is secret (matched on the lower-cased name)."""
_PLACEHOLDER = (
    r"(?i)^(?:\$|<|\{|%|\*+$|x+$|\.\.\.|changeme$|none$|null$|true$|false$|"
    r"your[_\-]|example|placeholder|redacted|«)"
)

# Lower-case substrings one of which must be present for each rule to be tried at all.
_NEEDLES: dict[str, tuple[str, ...]] = {
    "private-key": ("private key",),
    "anthropic-key": ("sk-ant-",),
    "openai-key": ("sk-",),
    "huggingface-token": ("hf_",),
    "github-token": ("gh", "github_pat_"),
    "gitlab-token": ("gl",),
    "slack-token": ("xox",),
    "stripe-key": ("_live_", "_test_"),
    "google-api-key": ("aiza",),
    "aws-access-key": ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
    "jwt": ("eyj",),
    "npm-token": ("npm_",),
    "wandb-key": ("wandb",),
    "url-password": ("://",),
    "url-token": ("://",),
    "url-query-secret": ("=",),
    "bearer-token": ("authorization",),
    "cli-password": ("mysql", "mariadb", "sshpass", "--pass", "login", "-u", "--user"),
}
_RULES = [(kind, pat, grp, _NEEDLES[kind]) for kind, pat, grp in _TOKEN_RULES]
_compiled: dict[str, re.Pattern[str]] = {}


def _rx(pattern: str, dotall: bool = False) -> re.Pattern[str]:
    # Compiled on first use: most texts (and most hook calls) never need most rules.
    rx = _compiled.get(pattern)
    if rx is None:
        rx = _compiled[pattern] = re.compile(pattern, re.DOTALL if dotall else 0)
    return rx


# Cheap substring pre-filter (lower-cased): a text with none of these has no secret any rule can find.
_QUICK = (
    "private key",
    "sk-",
    "hf_",
    "gh",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glptt-",
    "glrt-",
    "glcbt-",
    "gloas-",
    "xox",
    "_live_",
    "_test_",
    "aiza",
    "akia",
    "asia",
    "agpa",
    "aida",
    "aroa",
    "anpa",
    "anva",
    "aipa",
    "eyj",
    "npm_",
    "wandb",
    "login",
    "://",
    "authorization",
    "mysql",
    "mariadb",
    "sshpass",
    "pass",
    "key",
    "secret",
    "token",
    "pwd",
    "credential",
)


# A line that is nothing but base64 (a PEM body line, 64 characters in PEM, 70 in OpenSSH keys), on its own
# line or between the literal `\\n`s of a JSON-escaped key: masked even without its BEGIN line, which the
# log's tail or a report's line limit may have cut off. Hex digests (one case only) are not matched.
_KEY_LINE = r"(?m)(?:^[ \t]*|\\n)([A-Za-z0-9+/]{40,100}={0,2})(?=[ \t]*$|\\n|[ \t]*-----END )"


def _is_key_line(value: str) -> bool:
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and _entropy(value) >= 4.0
    )


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    import math

    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _assignment_is_secret(name: str, value: str) -> bool:
    if _rx(_PLACEHOLDER).match(value):
        return False
    lname = name.lower()
    if lname.lstrip("$") in ("pwd", "oldpwd") and value.startswith(("/", "~")):
        return False  # the shell's working directories (`env` output), not passwords
    if "pass" in lname or lname.endswith("pwd"):
        return len(value) >= 4
    if value.isdigit() or value.startswith(("/", "./", "~", "../", "http")):
        return False  # numbers, paths and addresses are not secrets
    if "secret" in lname or "private" in lname:  # SECRET_KEY=hunter2hunter2: the name says it all
        return len(value) >= 8 and _entropy(value) >= 2.5
    if len(value) < 16:
        return False
    if value.isdigit() or value.startswith(("/", "./", "~", "../", "http")):
        return False  # numbers, paths and addresses are not secrets
    return _entropy(value) >= 3.2


_KEYWORDS = ("key", "secret", "token", "pass", "pwd", "credential")
_AFTER_NAME = r"""(?P<sep>['"]?\s*(?:=|:|\s=>)\s*)(?P<q>['"]?)(?P<value>[^\s'"&;|,}]{1,512})"""


def _assignments(text: str) -> Iterator[tuple[str, re.Match[str]]]:
    """Each `NAME=value` (or `name: value`) whose name says secret: the name and the match of what follows it.

    Keywords are found with `str.find` and names scanned backwards: a case-insensitive regex alternation
    tried at every offset cost 60-90 ms on a 256 KB log; this costs a few.
    """
    low = text.encode("ascii", "replace").decode().lower()  # one character for one: offsets stay
    after = _rx(_AFTER_NAME)
    ends: set[int] = set()
    for kw in _KEYWORDS:
        pos = low.find(kw)
        while pos >= 0:
            end = pos + len(kw)
            if kw == "pass":  # password, passwd
                end += 4 if low.startswith("word", end) else 2 if low.startswith("wd", end) else 0
            ends.add(end)
            pos = low.find(kw, pos + 1)
    for end in sorted(ends):
        m = after.match(text, end)
        if m is None:
            continue
        begin = end
        while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "_.-"):
            begin -= 1  # the whole name (AWS_SECRET_ACCESS_KEY), scanned backwards: linear, unlike a regex
        if _rx(_NAME_OK).search(low, begin, end):
            yield text[begin:end], m


def _value_end(text: str, m: re.Match[str], name: str) -> int:
    """Where a password ends: at its closing quote, or at the next blank (`&`, `;` and `,` may be in it)."""
    end = m.end("value")
    lname = name.lower()
    if not ("pass" in lname or lname.endswith("pwd") or "secret" in lname):
        return end
    stops = m.group("q") or " \t\n'\""
    while end < len(text) and text[end] not in stops and text[end] != "\n" and end - m.start("value") < 512:
        end += 1
    return end


def _assignment_kind(name: str) -> str:
    lname = name.lower()
    if "pass" in lname or lname.endswith("pwd"):
        return "password"
    if "aws" in lname and "secret" in lname:
        return "aws-secret-key"
    return "secret-assignment"


_KNOWN: dict[str, str] = {}
"""Exact secret values this process was handed (e.g. a session's inbox token): redacted wherever they appear,
even where no pattern would recognise them (a bare hex token)."""


def remember(value: str, kind: str) -> None:
    """Treat `value` as a secret of `kind` from now on in this process (values under 8 characters are ignored)."""
    if isinstance(value, str) and len(value) >= 8:
        _KNOWN[value] = kind


def _find(text: str) -> list[Secret]:
    low = text.lower()
    known = [(v, k) for v, k in _KNOWN.items() if v in text]
    if not known and not any(q in low for q in _QUICK) and not _rx(_KEY_LINE).search(text):
        return []
    found: list[Secret] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, start: int, end: int) -> None:
        if end <= start or any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        found.append(Secret(kind, start, end, fingerprint(text[start:end])))

    for kind, pattern, grp, needles in _RULES:
        if not any(n in low for n in needles):
            continue
        for m in _rx(pattern, kind == "private-key").finditer(text):
            add(kind, m.start(grp), m.end(grp))
    for m in _rx(_KEY_LINE).finditer(text):
        if _is_key_line(m.group(1)):
            add("private-key", m.start(1), m.end(1))
    for name, m in _assignments(text):
        end = _value_end(text, m, name)
        if _assignment_is_secret(name, text[m.start("value") : end]):
            add(_assignment_kind(name), m.start("value"), end)
    for value, kind in known:  # after the patterns: a remembered value only adds what no rule recognised
        start = text.find(value)
        while start >= 0:
            add(kind, start, start + len(value))
            start = text.find(value, start + len(value))
    found.sort(key=lambda s: s.start)
    return found


def find_secrets(text: str) -> list[Secret]:
    """Every secret in `text`, in order, non-overlapping (never raises; [] on odd input)."""
    try:
        return _find(text if isinstance(text, str) else str(text))
    except Exception:  # noqa: BLE001 - a detector that raises must not break a report
        return []


def redact(text: str) -> str:
    """`text` with every secret replaced by `«redacted:<kind>:<fingerprint>»` (never raises)."""
    try:
        if not isinstance(text, str):
            text = str(text)
        secrets = _find(text)
        if not secrets:
            return text
        parts: list[str] = []
        pos = 0
        for s in secrets:
            parts.append(text[pos : s.start])
            parts.append(f"«redacted:{s.kind}:{s.fingerprint}»")
            pos = s.end
        parts.append(text[pos:])
        return "".join(parts)
    except Exception:  # noqa: BLE001 - fail closed on the rare odd input rather than leak
        return "«redacted:unreadable:00000000»"
