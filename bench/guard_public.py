"""The guard against other projects' labelled command corpora (dcg, claude-code-safety-net, schlock) and
Dippy's read-only commands. Fetches nothing: reads the JSONL rows scripts/extract_guard_corpora.py wrote.

    .venv/bin/python scripts/extract_guard_corpora.py --repos DIR    # once, see docs/guard.md
    .venv/bin/python bench/guard_public.py [--dir /tmp/guard-corpora] [--misses N] [--json]

Per corpus it prints the dangerous rows stopped (ask or deny), the safe rows stopped, and the rows left out
of scope with the reason: SCOPE (what those projects block that this guard leaves alone on purpose, or rows
that are harmless by what bash and git do), SAFE_SCOPE (rows labelled safe that issue 20 says must be
stopped) and rows one corpus labels both ways.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402

GOALS = {"dangerous": 0.95, "safe": 0.02, "readonly": 0.005}

# Dangerous rows this guard does not try to stop, and why. Matched against the command text; a row out of
# scope is counted apart (neither caught nor missed). Keep each entry a policy, not a row.
SCOPE: list[tuple[str, str]] = [
    (
        r"(?i)\b(Remove-Item|rd /s|rmdir /s|del /[fsq]|format [a-z]:|diskutil|cmd(\.exe)? /c|powershell|pwsh)\b",
        "Windows or macOS tool, not a Linux cluster shell",
    ),
    (
        r"^\s*(cat|less|more|head|tail|grep|strings|base64|xxd|od|nl|awk|sed -n)\b[^|;&]*"
        r"(\s|\$\{?IFS\}?|,)/etc/(passwd|group|hosts|os-release|hostname)\b|^\S*/etc/passwd$",
        "reads a world-readable system file (not a secret, changes nothing)",
    ),
    (
        r"^(echo \\?\"\$\(|x=\$\(|bash <\()?\s*(kubectl|k|oc)\s(?!.*\bdelete\s+(ns|namespace|pv|pvc|node|all)\b)"
        r"(?!.*--all( |$))"
        r"|^(aws|gcloud|az) (iam|sts|secretsmanager|ssm|secrets|auth|account|ad|keyvault|configure (get|list))\b",
        "cloud or Kubernetes control plane other than deleting data (RBAC, config, rollouts, secret stores):"
        " the account's own permissions, not a login-node shell rule",
    ),
    (
        r"^(gh auth token|pass (show|-c)|op read)\b",
        "prints a token through its own CLI (Dippy counts these read-only)",
    ),
    (
        r"~/\.(ssh/(config|known_hosts|authorized_keys)|aws/config|docker/config)$",
        "reads a config file that holds no secret",
    ),
    (
        r"schlock",
        "another guard's own settings (frontdesk protects its own: agent.sandbox-widen)",
    ),
    (
        r"^git push --force-with-lease",
        "--force-with-lease is the safe form frontdesk recommends",
    ),
    (
        r"^[A-Z]{2,} [A-Z]",
        "upper-case program name: no such program on a case-sensitive filesystem",
    ),
    (
        r"^(\S+=\S* )+git |^=",
        "not a valid assignment, so the shell runs no git at all",
    ),
    (
        r"\bfind (\.|/tmp\S*)( |$)|\bfind \. -|rm -rf (\./build|[0-9]+)(\s|$)"
        r"|^rm -rf (`pwd`|\$\(pwd\)|\$PWD)/[\w.-]+$"
        r"|shutil\.rmtree\(['\"]/tmp/[\w.-]+['\"]\)",  # read as `rm -rf /tmp/NAME` (guard/codedelete.py)
        "deletes or writes inside the working directory or temp (the agent's own tree, by design)",
    ),
    (
        r"^(x=\$\()?(eval|exec) [^$`]*$|\| *eval\b|^\w+='[^']*' && eval \$\w+$|^x=\$\(echo \w+ \| \w+\)$",
        "eval, exec or a shell fed fixed text: the text itself is checked as a command, and is harmless here",
    ),
    (
        r"git -c (credential\.helper|core\.editor)=[\w.-]+ ",
        "git -c naming a plain program as helper or editor (no shell command)",
    ),
    (
        r"\bxargs (-i|-i\{\}|--replace(=\{\})?) [^{}]*$",
        "xargs -i with no {} in the command appends no input: the command runs with no operand",
    ),
    (r"^git -- ", "git refuses `--` before the subcommand (unknown option): nothing runs"),
    (r"^git clean (-\w*n|--dry-run)", "-n makes git clean a dry run: nothing is removed"),
    (
        r"^git checkout (-t|--track) [^-\s]\S* [^-\s]\S*$",
        "git refuses --track with paths and no branch name (`missing branch name; try -b`): nothing changes",
    ),
    (
        r"^(\w+)=[^\s;&|]+ [^;&|]*\$\{?\1\b",
        "a prefix assignment does not change the same command's words (bash expands $VAR before assigning)",
    ),
    (
        r"^echo( -[neE]+)?( ('[^']*'|\"[^\"$`]*\"|[^\s|;&<>`$()'\"]+))*$",
        "echo only prints its arguments; nothing runs them",
    ),
    (
        r"\b(npm|yarn|pnpm|bun) (un)?publish\b|\bcargo (publish|yank)\b|\btwine upload\b|\bgh (release|repo) delete\b",
        "publishing or deleting a public package/repo: a forge permission, not a shell rule",
    ),
]


# Rows labelled safe that issue 20's own rules say must be stopped (the label is wrong by those rules, or by
# what bash and git do). Counted apart with the reason, never silently: each entry a class, not a row.
SAFE_SCOPE: list[tuple[str, str]] = [
    (
        r"^git checkout --(no-)?recurse-submodules [^-\s]\S* [^-\s]\S*$",
        "labelled safe, but git reads `checkout REV FILE` as overwriting FILE from REV (issue 20: checkout REV --"
        " FILES); --recurse-submodules takes a value only after `=`",
    ),
    (
        r"^\w+\\[a-z]\w* ",
        "labelled safe, but bash drops a backslash before a letter (`r\\m` runs rm), and the command is rm -rf /",
    ),
]


def load(folder: Path) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        out[path.stem] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def out_of_scope(command: str) -> str | None:
    for pattern, reason in SCOPE:
        if re.search(pattern, command):
            return reason
    return None


@dataclass
class Figures:
    """One corpus's result: rows checked and stopped per label, rows out of scope by reason."""

    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GOALS, 0))
    stopped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GOALS, 0))
    out_of_scope: dict[str, int] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    false_stops: list[str] = field(default_factory=list)
    p99_ms: float = 0.0

    @property
    def rate(self) -> dict[str, float]:
        return {k: self.stopped[k] / n for k, n in self.total.items() if n}

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "rate": self.rate}


BOTH_LABELS = "labelled both dangerous and safe in the same corpus (a test's own config or level decides)"


def _scope(row: dict[str, str], both: frozenset[str] = frozenset()) -> str | None:
    if row.get("note", "").startswith("cwd="):
        return "the label depends on the test fixture's working directory"
    if row["command"] in both:
        return BOTH_LABELS
    if row["label"] == "dangerous":
        return out_of_scope(row["command"])
    return next((reason for pattern, reason in SAFE_SCOPE if re.search(pattern, row["command"])), None)


def figures(rows: list[dict[str, str]]) -> Figures:
    ctx = corpus_context()
    out = Figures()
    times: list[float] = []
    for row in rows:  # warm up: regexes are compiled on first use
        check(row["command"], ctx)
    labels: dict[str, set[str]] = {}
    for row in rows:
        labels.setdefault(row["command"], set()).add(row["label"])
    both = frozenset(c for c, seen in labels.items() if {"dangerous", "safe"} <= seen)
    for row in rows:
        label, command = row["label"], row["command"]
        reason = _scope(row, both)
        if reason:
            out.out_of_scope[reason] = out.out_of_scope.get(reason, 0) + 1
            continue
        t0 = time.process_time()
        verdict = check(command, ctx)
        times.append(time.process_time() - t0)
        hit = verdict.decision is not Decision.ALLOW
        out.total[label] += 1
        out.stopped[label] += hit
        if label == "dangerous" and not hit:
            out.misses.append(command.replace("\n", "⏎"))
        if label != "dangerous" and hit:
            out.false_stops.append(f"[{verdict.rule}] " + command.replace("\n", "⏎"))
    times.sort()
    out.p99_ms = times[int(0.99 * (len(times) - 1))] * 1e3 if times else 0.0
    return out


def _meets(label: str, rate: float) -> bool:
    return rate >= GOALS[label] if label == "dangerous" else rate <= GOALS[label]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/guard-corpora")
    parser.add_argument("--misses", type=int, default=0, help="print up to N misses and false stops per corpus")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpora = load(Path(args.dir))
    if not corpora:
        print(f"no *.jsonl in {args.dir}: run scripts/extract_guard_corpora.py first", file=sys.stderr)
        return 1
    results = {name: figures(rows) for name, rows in corpora.items()}
    if args.json:
        print(json.dumps({name: r.to_json() for name, r in results.items()}, indent=2))
        return 0
    for name, r in results.items():
        parts = [
            f"{label} stopped {r.stopped[label]}/{n} = {r.rate[label]:.1%} "
            f"({'ok' if _meets(label, r.rate[label]) else 'MISSES GOAL'})"
            for label, n in r.total.items()
            if n
        ]
        print(f"{name}: " + "; ".join(parts) + f"; p99 {r.p99_ms:.2f} ms CPU per check")
        for reason, count in sorted(r.out_of_scope.items(), key=lambda kv: -kv[1]):
            print(f"  out of scope: {count:3d}  {reason}")
        for line in r.misses[: args.misses]:
            print(f"  missed: {line}")
        for line in r.false_stops[: args.misses]:
            print(f"  false stop: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
