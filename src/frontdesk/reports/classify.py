"""Failure signatures: the end state plus a normalised cause, read from a job's report and logs.

Pure: no clock, database or I/O beyond reading the packaged catalog once. The matchers are data
(`catalog.toml`); this module compiles them, runs them over the tail of a log, and normalises what
they find (paths, numbers, ids, hex, timestamps stripped) so that one failure matches across runs,
days and users. It sits with the reports (below the plug-ins) because reports, lessons and `--json`
share its vocabulary (`FailureKind`); the failure memory re-exports it with the secret scanner wired in
(`frontdesk.memory.classify`). Callers that have not redacted the text pass `redact`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from frontdesk.jobs import JobState

__all__ = ["Catalog", "KindInfo", "Matcher", "Signature", "classify", "load_catalog", "normalise"]

_SCAN_BYTES = 256 * 1024
"""Only the end of a log is read: the cause of an ending is near the end."""

# States whose meaning wins over whatever else the log says; a matcher of another kind cannot explain them.
_STRICT_STATES = {
    JobState.TIMEOUT,
    JobState.DEADLINE,
    JobState.OUT_OF_MEMORY,
    JobState.NODE_FAIL,
    JobState.BOOT_FAIL,
    JobState.PREEMPTED,
}
_CANCELLED_KINDS = {"walltime", "node_failure", "host_oom", "preempted"}
_NO_DETAIL_KINDS = frozenset(
    "host_oom cuda_oom walltime node_failure disk_quota permission_denied cancelled preempted dependency nan_loss "
    "address_in_use device_mismatch segfault illegal_instruction no_gpu driver_mismatch mpi_launch "
    "package_resolution".split()
)


@dataclass(frozen=True)
class KindInfo:
    """What a kind of failure means and what to do about it."""

    kind: str
    summary: str
    next_step: str
    substrate: bool
    """Whether it comes from the shared substrate (toolchain, libraries, nodes), not the job itself."""
    next_step_plain: str = ""
    """The next step when the log gave no detail (`next_step` may name `{detail}`)."""

    def advice(self, detail: str = "") -> str:
        """The next step, made specific with the detail the log gave (a module, a library, a capability)."""
        if "{detail}" not in self.next_step:
            return self.next_step
        if not detail:
            return self.next_step_plain or self.next_step.replace("{detail}", "it")
        return self.next_step.replace("{detail}", detail)


@dataclass(frozen=True)
class Matcher:
    """One compiled catalog entry."""

    id: str
    kind: str
    regex: re.Pattern[str]
    hints: tuple[str, ...]
    """Lower-case literals; every match of `regex` contains one (a prefilter that keeps scans cheap)."""
    priority: int
    states: frozenset[str] | None = None
    detail_from_line: bool = False
    hint_bytes: tuple[bytes, ...] = ()
    """The hints as ASCII bytes (what the scan searches)."""


@dataclass(frozen=True)
class Catalog:
    """Every matcher, every kind, and the kind each end state implies."""

    matchers: tuple[Matcher, ...]
    kinds: dict[str, KindInfo]
    states: dict[str, str]


@dataclass(frozen=True)
class Signature:
    """A classified ending: `key` is what two jobs that failed the same way share."""

    state: str | None
    kind: str
    detail: str
    cause: str
    line: str = ""
    """The log line that decided it, as written (may hold paths: do not share it unredacted)."""
    matcher: str | None = None
    normalised_line: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """`STATE:kind:detail`, the stable identity of this failure."""
        return f"{self.state or '*'}:{self.kind}:{self.detail}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (the schema of `frontdesk memory classify --json`)."""
        return {
            "key": self.key,
            "state": self.state,
            "kind": self.kind,
            "detail": self.detail,
            "cause": self.cause,
            "line": self.line,
            "normalised_line": self.normalised_line,
            "matcher": self.matcher,
            "next_step": self.next_step,
        }

    @property
    def next_step(self) -> str:
        """What to do about it, made specific with the detail ('' for a completed job)."""
        info = load_catalog().kinds.get(self.kind)
        return info.advice(self.detail) if info else ""


# ------------------------------------------------------------------------------------------ normalise
_NORMALISERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (
        re.compile(
            r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun)?\s*(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
            r"\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}(\s+\d{4})?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b"), "<time>"),
    (re.compile(r"\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b", re.I), "<hex>"),
    (re.compile(r"(?:(?<=[\s'\"=(\[,:])|^)(?:~[\w.\-]*|\.{1,2})?/[^\s'\",;:)\]]+"), "<path>"),
    (re.compile(r"\d+(?:[.,]\d+)*"), "<n>"),
    (re.compile(r"\s+"), " "),
]


def normalise(text: str, limit: int = 200) -> str:
    """The text with paths, numbers, ids, hex and timestamps replaced by placeholders."""
    out = text
    for pattern, repl in _NORMALISERS:
        out = pattern.sub(repl, out)
    return out.strip()[:limit]


# ------------------------------------------------------------------------------------------ catalog
def _compile(entry: dict[str, Any]) -> Matcher:
    flags = re.MULTILINE | (0 if entry.get("case") else re.IGNORECASE)
    states = entry.get("states")
    hint = entry.get("hint", [])
    hints = [hint] if isinstance(hint, str) else list(hint)
    return Matcher(
        id=str(entry["id"]),
        kind=str(entry["kind"]),
        regex=re.compile(entry["pattern"], flags),
        hints=tuple(str(h).lower() for h in hints),
        hint_bytes=tuple(str(h).lower().encode("ascii", "replace") for h in hints),
        priority=int(entry.get("priority", 50)),
        states=frozenset(states) if states else None,
        detail_from_line=bool(entry.get("detail_from_line")),
    )


def parse_catalog(data: dict[str, Any]) -> Catalog:
    """Build a Catalog from parsed TOML data (raises ValueError on an unknown kind)."""
    kinds = {
        name: KindInfo(
            name, str(v["summary"]), str(v["next_step"]), bool(v.get("substrate")), str(v.get("next_step_plain", ""))
        )
        for name, v in data.get("kinds", {}).items()
    }
    # highest priority first: once a match is found, lower priorities cannot win and are skipped
    matchers = tuple(sorted((_compile(e) for e in data.get("matcher", [])), key=lambda m: -m.priority))
    for m in matchers:
        if m.kind not in kinds:
            raise ValueError(f"matcher {m.id}: unknown kind {m.kind!r}")
    states = {k: str(v) for k, v in data.get("states", {}).items()}
    return Catalog(matchers=matchers, kinds=kinds, states=states)


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The packaged catalog, compiled once."""
    text = resources.files("frontdesk.reports").joinpath("catalog.toml").read_text()
    return parse_catalog(tomllib.loads(text))


# ------------------------------------------------------------------------------------------ classify
_ERROR_WORDS = re.compile(
    r"error|exception|fatal|failed|failure|abort|killed|denied|not found|panic|"
    r"segmentation|assert|cannot|unable",
    re.I,
)
_PY_EXC = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b")
_NOISE = re.compile(r"^\s*(Traceback \(most recent call last\)|File \"|\^+\s*$|During handling)")
# The last line of a traceback, also behind a rank or log prefix (`[rank0]: RuntimeError: ...`).
_FINAL = re.compile(
    r"^(?:\S*[\]>|:]\s*)?(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit)\b(?::|\s*$)|^Fatal Python error",
    re.M,
)
# Lines that only warn: a TensorFlow `W .../dso_loader.cc` line, a UserWarning, `[W ...]`, `WARNING`.
_WARNING = re.compile(
    r"(?:^|\s|\])[WI](?:\d{4}\s|\s+[\w/.-]+\.(?:cc|cpp|py):\d+\])|\b\w*Warning\b|^\s*\[W |\bWARNING\b|"
    r"Ignore above cudart dlerror",
)
# A scheduler's verdict or a fatal signal: decisive wherever it sits.
_VERDICT = re.compile(
    r"slurmstepd|\*\*\* (?:JOB|STEP) |srun: error|DUE TO |oom[-_]kill|Killed process|Out of memory: Kill|"
    r"Segmentation fault|Illegal instruction|Bus error|core dumped|SIG(?:SEGV|ILL|BUS|KILL)\b",
    re.I,
)


_CAPABILITY = re.compile(r"CUDA capability (sm_\d+)|compute capability:? (\d+\.\d+)", re.I)


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)].strip()


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines()[-200:] if ln.strip()]
    for ln in reversed(lines):
        if _PY_EXC.match(ln):
            return ln
    for ln in reversed(lines):
        if _ERROR_WORDS.search(ln) and not _NOISE.match(ln) and not _WARNING.search(ln):
            return ln
    return lines[-1] if lines else ""


def _final_error_at(text: str) -> int:
    """Where the last traceback's final line starts (-1 when the log's end holds none)."""
    start = max(0, len(text) - 16384)
    last = -1
    for m in _FINAL.finditer(text, start):
        if not _WARNING.search(_line_at(text, m.start())):
            last = m.start()
    return last


def _tier(text: str, pos: int, final_at: int) -> int:
    """How decisive the line at `pos` is: 0 a warning, 1 an error line, 2 the final line or a verdict."""
    line_start = text.rfind("\n", 0, pos) + 1
    line = _line_at(text, pos)
    if line_start == final_at or _VERDICT.search(line):
        return 2
    return 0 if _WARNING.search(line) else 1


def _window(text: str, pos: int) -> tuple[int, int]:
    """The line holding `pos` with its neighbours (messages such as Lmod's wrap onto the next lines)."""
    line_start = text.rfind("\n", 0, pos) + 1
    start = text.rfind("\n", 0, max(line_start - 1, 0)) + 1 if line_start else 0
    end = pos
    for _ in range(3):  # and the two lines after it (a name may follow a blank line)
        nxt = text.find("\n", end + 1)
        if nxt < 0:
            return start, len(text)
        end = nxt
    return start, end


def _last_match(m: Matcher, text: str, lowered: bytes) -> re.Match[str] | None:
    """The last match of `m`.

    Only the lines holding one of the matcher's hints are searched, from the end backwards, so a
    plain substring search does the scanning and the first hit found is the last one in the log.
    """
    if not m.hints:
        found = list(m.regex.finditer(text))
        return found[-1] if found else None
    cursors = {h: lowered.rfind(h) for h in m.hint_bytes}
    tested_to = len(text) + 1
    while True:
        hint, pos = max(cursors.items(), key=lambda kv: kv[1])
        if pos < 0:
            return None
        cursors[hint] = lowered.rfind(hint, 0, pos)
        if pos >= tested_to:
            continue
        start, end = _window(text, pos)
        found = list(m.regex.finditer(text, start, end))
        if found:
            return found[-1]
        tested_to = text.rfind("\n", 0, pos) + 1


def _detail(kind: str, match: re.Match[str], matcher: Matcher) -> str:
    if kind in _NO_DETAIL_KINDS:
        return ""
    raw = next((v for k, v in match.groupdict().items() if k.startswith("detail") and v), None)
    if kind == "nccl_error":
        return "timeout" if "timeout" in match.group(0).lower() else (raw or "error")
    if raw is None:
        raw = "" if kind in ("no_kernel_image", "hub_offline", "glibc_version") else match.group(0)
    if kind == "missing_library":
        return re.sub(r"\.so[\d.]*$", ".so", raw)
    if kind == "missing_module":
        return raw.split("/")[0].lower()
    if kind == "glibc_version":
        return raw.split("_")[0]
    return normalise(raw, 120) if kind not in ("missing_import", "hub_offline", "no_kernel_image") else raw


def _cause(info: KindInfo | None, kind: str, detail: str) -> str:
    summary = info.summary if info else kind
    return f"{summary}: {detail}" if detail else summary


def _allowed(m: Matcher, state: str | None, implied: str | None) -> bool:
    if m.states is not None and (state is None or state not in m.states):
        return False
    if state in _STRICT_STATES and m.kind != implied and not (m.states and state in m.states):
        return False  # a strict state keeps its own kind, unless a matcher names that state (a GPU share's cap)
    return not (state == JobState.CANCELLED and m.kind not in _CANCELLED_KINDS)


def _best(cat: Catalog, text: str, lowered: bytes, state: str | None) -> tuple[int, Matcher, re.Match[str]] | None:
    """The decisive match: by tier (warning < error line < final line or verdict), then priority, then position."""
    implied = cat.states.get(state or "")
    final_at = _final_error_at(text)
    best: tuple[tuple[int, int, int], Matcher, re.Match[str]] | None = None
    for m in cat.matchers:
        if best is not None and best[0][0] == 2 and m.priority < best[0][1]:
            break  # sorted by priority: nothing later can outrank a decisive match
        if m.hints and not any(h in lowered for h in m.hint_bytes):
            continue
        if not _allowed(m, state, implied):
            continue
        match = _last_match(m, text, lowered)
        if match is None:
            continue
        if final_at >= 0 and _tier(text, match.start(), final_at) < 2:  # the decisive line, if it matches there too
            end = text.find("\n", final_at)
            match = m.regex.search(text, final_at, end if end >= 0 else len(text)) or match
        rank = (_tier(text, match.start(), final_at), m.priority, match.start())
        if best is None or rank > best[0]:
            best = (rank, m, match)
    if best is None:
        return None
    if best[0][0] == 0 and final_at > best[0][2] and state not in _STRICT_STATES:
        return None  # only warnings matched, and a later error line decided the ending
    return best[0][0], best[1], best[2]


def classify(
    text: str,
    state: str | None = None,
    exit_code: int | None = None,
    catalog: Catalog | None = None,
    redact: Callable[[str], str] | None = None,
) -> Signature:
    """Classify one ending from its log text (stdout and stderr tails, joined) and its end state."""
    cat = catalog or load_catalog()
    state = state.upper() if state else None
    if state == JobState.COMPLETED:
        return Signature(state, "ok", "", "completed")
    # Redacted before anything else reads it: details, causes, signatures and lessons are built from this text.
    text = text[-_SCAN_BYTES:]
    if redact is not None:
        text = redact(text)
    # ASCII bytes, one per character ('?' for the rest): offsets match `text`, and lowering is cheap
    lowered = text.encode("ascii", "replace").lower()
    found = _best(cat, text, lowered, state)
    if found is not None:
        _tier_, matcher, match = found
        kind = matcher.kind
        line = _line_at(text, match.start())
        detail = normalise(line, 120) if matcher.detail_from_line else _detail(kind, match, matcher)
        if kind == "no_kernel_image" and not detail:
            cap = _CAPABILITY.search(text)  # often on an earlier warning line
            detail = (cap.group(1) or f"sm_{cap.group(2).replace('.', '')}") if cap else ""
        return Signature(
            state, kind, detail, _cause(cat.kinds.get(kind), kind, detail), line[:300], matcher.id, normalise(line)
        )
    implied = cat.states.get(state or "")
    kind = implied or ("exit_error" if text.strip() or exit_code else "unknown")
    line = _last_error_line(text) if kind == "exit_error" else ""
    if kind == "exit_error" and not line and exit_code is not None:
        line = f"exit code {exit_code}"
    detail = normalise(line, 120) if kind == "exit_error" else ""
    return Signature(state, kind, detail, _cause(cat.kinds.get(kind), kind, detail), line[:300], None, normalise(line))
