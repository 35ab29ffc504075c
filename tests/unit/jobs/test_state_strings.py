"""No job state spelled as a bare string outside `frontdesk.jobs` (use `JobState`); the allowlist only shrinks."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from frontdesk.jobs.state import SLURM_STATES, JobState

SRC = Path(__file__).resolve().parents[3] / "src" / "frontdesk"
NAMES = {s.value for s in JobState} | set(SLURM_STATES)
_QUOTED = re.compile(r"'(" + "|".join(sorted(NAMES)) + r")'")

ALLOWED: dict[str, int] = {
    # path under src/frontdesk: how many state strings it still has (its owner replaces them with JobState)
    "backends/slurm/backend.py": 1,  # Slurm's raw COMPLETING (not a JobState: the job is still in its epilog)
    "backends/slurm/clitext.py": 24,  # Slurm's own spellings in squeue/sacct output (all 24 of its states)
    "backends/slurm/squeue_text.py": 18,  # Slurm's own spellings in squeue output
}


def _count(path: Path) -> int:
    n = 0
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in NAMES:
                n += 1
            else:
                n += len(_QUOTED.findall(node.value))  # inside SQL: state='PENDING'
    return n


def _counts() -> Counter[str]:
    out: Counter[str] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel.startswith("jobs/"):
            continue
        n = _count(path)
        if n:
            out[rel] = n
    return out


def test_no_new_state_strings_outside_jobs() -> None:
    counts = _counts()
    grown = {f: n for f, n in counts.items() if n > ALLOWED.get(f, 0)}
    assert not grown, f"state strings outside frontdesk.jobs (use JobState): {grown}"


def test_the_allowlist_only_shrinks() -> None:
    counts = _counts()
    shrunk = {f: counts.get(f, 0) for f, n in ALLOWED.items() if counts.get(f, 0) < n}
    assert not shrunk, f"fewer state strings now: lower these in tests/unit/jobs/test_state_strings.py: {shrunk}"
