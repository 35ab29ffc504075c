"""Guard benchmark: catch rate and false positives on the labelled corpus, per-check latency, cold start of
`frontdesk guard check|hook`, and our secret detector next to detect-secrets, all measured in one run.

    .venv/bin/python bench/guard_corpus.py [--rounds 5] [--cold 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "data" / "guard"))

from corpus_loader import corpus_context, load_corpus  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402
from frontdesk.guard.secrets import find_secrets, redact  # noqa: E402

# Extra secret lines beyond the corpus's [secret.in-command] section: formats detect-secrets knows well.
EXTRA_SECRETS = [
    "export OPENAI_API_KEY=sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJAbCdEfGhIjKlMnOpQrSt",
    "OPENAI_API_KEY=sk-proj-Xk2m9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qw2Er python chat.py",
    "export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefGHIJKL_mnop",
    "export HUGGING_FACE_HUB_TOKEN=hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789",
    "git push https://ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5@github.com/o/r main",
    "export GITLAB_TOKEN=glpat-AbCd3FgH1jKlMn0pQrSt",
    "aws configure set aws_access_key_id AKIAQWERTYUIOPASDFGH",
    "export SLACK_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe login --api-key sk_live_AbCdEfGhIjKlMnOpQrStUvWx",
    "curl 'https://maps.googleapis.com/x?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW'",
    "redis-cli -u redis://default:Sup3rS3cretRedis@cache.example.org:6379",
    "mysql -h db -u root -pCorrectHorse42 -e 'show databases'",
    "mariadb -uadmin -pAdm1nPass! mydb",
    "python app.py --password=Tr0ub4dor3",
    "export GH_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def corpus_figures(rounds: int) -> dict[str, float]:
    cases = load_corpus()
    contexts = {key: corpus_context(*key) for key in {(c.role, c.gpus) for c in cases}}
    reads: list[str] = []
    for ctx in contexts.values():  # count file reads: a check that scans a script is not a typical check
        inner = ctx.read_file

        def counting(path: str, inner: object = inner) -> str | None:
            text = inner(path)  # type: ignore[operator]
            if text is not None:
                reads.append(path)
            return text  # type: ignore[no-any-return]

        ctx.read_file = counting
    scans: set[str] = set()
    for case in cases:  # warm up: parser, rules, regex caches; note which commands read a script
        before = len(reads)
        check(case.command, contexts[(case.role, case.gpus)])
        if len(reads) > before:
            scans.add(case.command)
    times: list[float] = []
    cpu_typical: list[float] = []
    wall_typical: list[float] = []
    benign_times: list[float] = []
    caught = stopped = right_rule = 0
    dangerous = [c for c in cases if c.dangerous]
    benign = [c for c in cases if not c.dangerous]
    for r in range(rounds):
        for case in cases:
            c0 = time.process_time()
            t0 = time.perf_counter()
            verdict = check(case.command, contexts[(case.role, case.gpus)])
            dt = time.perf_counter() - t0
            cpu = time.process_time() - c0
            times.append(dt)
            if case.command not in scans:
                wall_typical.append(dt)
                cpu_typical.append(cpu)
            if not case.dangerous:
                benign_times.append(dt)
            if r == 0:
                if case.dangerous and verdict.decision is not Decision.ALLOW:
                    caught += 1
                    right_rule += case.rule in verdict.matches
                if not case.dangerous and verdict.decision is not Decision.ALLOW:
                    stopped += 1
    return {
        "commands": len(cases),
        "dangerous": len(dangerous),
        "benign": len(benign),
        "catch_rate": caught / len(dangerous),
        "expected_rule_rate": right_rule / len(dangerous),
        "false_positive_rate": stopped / len(benign),
        "p50_ms": pct(times, 0.5) * 1e3,
        "p99_ms": pct(times, 0.99) * 1e3,
        "max_ms": max(times) * 1e3,
        "benign_p50_ms": pct(benign_times, 0.5) * 1e3,
        "benign_p99_ms": pct(benign_times, 0.99) * 1e3,
        "script_scanning_commands": len(scans),
        "typical_p50_ms": pct(wall_typical, 0.5) * 1e3,
        "typical_p99_ms": pct(wall_typical, 0.99) * 1e3,
        "typical_cpu_p50_ms": pct(cpu_typical, 0.5) * 1e3,
        "typical_cpu_p99_ms": pct(cpu_typical, 0.99) * 1e3,
        "load_average": os.getloadavg()[0],
    }


def cold_start(n: int) -> dict[str, float]:
    """Median wall and CPU (user+sys of the child) time of fresh processes, as an agent's hook runs them."""
    import resource

    env = {**os.environ, "FRONTDESK_HOME": tempfile.mkdtemp(prefix="fd-bench-")}
    env.pop("FRONTDESK_NODE_ROLE", None)
    # An installed frontdesk runs from cached bytecode; this sandbox sets PYTHONDONTWRITEBYTECODE, which would
    # make every start compile every module from source. Measure the installed case (a first run writes .pyc).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    py = sys.executable
    payload = json.dumps(
        {
            "tool_name": "Bash",
            "tool_input": {"command": "git status && make -j4"},
            "session_id": "bench",
            "cwd": str(ROOT),
        }
    )

    def median(argv: list[str], stdin: str | None = None) -> tuple[float, float]:
        subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60)  # warm, .pyc
        walls, cpus = [], []
        for _ in range(n):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3

    script = Path(py).parent / "frontdesk"  # the console script an installed hook runs
    cli = [str(script)] if script.exists() else [py, "-m", "frontdesk.cli.main"]
    out: dict[str, float] = {}
    for name, argv, stdin in (
        ("python_pass", [py, "-c", "pass"], None),
        ("guard_check", [*cli, "guard", "check", "--", "git", "status"], None),
        ("guard_hook", [*cli, "guard", "hook"], payload),
        ("fast_hook", [py, "-m", "frontdesk.cli.guard", "hook"], payload),
    ):
        out[f"{name}_ms"], out[f"{name}_cpu_ms"] = median(argv, stdin)
    return out


def secrets_comparison() -> dict[str, object]:
    cases = load_corpus()
    positives = [c.command for c in cases if c.rule == "secret.in-command"] + EXTRA_SECRETS
    negatives = [c.command for c in cases if not c.dangerous]
    lines = positives + negatives
    t0 = time.perf_counter()
    ours = [bool(find_secrets(line)) for line in lines]
    ours_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    import_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="fd-ds-")) / "commands.sh"
    tmp.write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n")
    t0 = time.perf_counter()
    with default_settings():
        collection = SecretsCollection()
        collection.scan_file(str(tmp))
    ds_s = time.perf_counter() - t0
    flagged = {s.line_number for secrets in collection.data.values() for s in secrets}
    theirs = [i + 1 in flagged for i in range(len(lines))]
    npos = len(positives)

    def rates(found: list[bool]) -> tuple[float, float]:
        return sum(found[:npos]) / npos, sum(found[npos:]) / len(negatives)

    ours_tp, ours_fp = rates(ours)
    ds_tp, ds_fp = rates(theirs)
    both_tp, _ = rates([a or b for a, b in zip(ours, theirs, strict=True)])
    missed_by_ds = [line[:60] for line, hit in zip(positives, theirs[:npos], strict=True) if not hit]
    missed_by_ours = [line[:60] for line, hit in zip(positives, ours[:npos], strict=True) if not hit]
    report = ("status: RUNNING\n" + "step 1 loss=0.31 lr=3e-4\n" * 60)[:2048]
    t0 = time.perf_counter()
    for _ in range(200):
        redact(report)
    redact_us = (time.perf_counter() - t0) / 200 * 1e6
    return {
        "positives": npos,
        "negatives": len(negatives),
        "ours_recall": ours_tp,
        "ours_fp": ours_fp,
        "detect_secrets_recall": ds_tp,
        "detect_secrets_fp": ds_fp,
        "union_recall": both_tp,
        "ours_us_per_line": ours_s / len(lines) * 1e6,
        "detect_secrets_us_per_line": ds_s / len(lines) * 1e6,
        "detect_secrets_import_ms": import_s * 1e3,
        "redact_2kb_report_us": redact_us,
        "missed_by_detect_secrets": missed_by_ds,
        "missed_by_ours": missed_by_ours,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = {
        "corpus": corpus_figures(args.rounds),
        "cold_start": cold_start(args.cold),
        "secrets": secrets_comparison(),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    c, k, s = figures["corpus"], figures["cold_start"], figures["secrets"]
    print(f"corpus: {c['commands']} commands ({c['dangerous']} dangerous, {c['benign']} benign)")
    print(
        f"  caught {c['catch_rate']:.1%} of dangerous (expected rule fired: {c['expected_rule_rate']:.1%}); "
        f"stopped {c['false_positive_rate']:.1%} of benign"
    )
    print(
        f"  per check: p50 {c['p50_ms']:.3f} ms, p99 {c['p99_ms']:.3f} ms, max {c['max_ms']:.2f} ms "
        f"(benign only: p50 {c['benign_p50_ms']:.3f}, p99 {c['benign_p99_ms']:.3f} ms)"
    )
    typical = c["commands"] - c["script_scanning_commands"]
    print(
        f"  typical (the {typical} that scan no script file): wall p50 {c['typical_p50_ms']:.3f} / "
        f"p99 {c['typical_p99_ms']:.3f} ms, CPU p50 {c['typical_cpu_p50_ms']:.3f} / "
        f"p99 {c['typical_cpu_p99_ms']:.3f} ms (load average {c['load_average']:.1f}, {os.cpu_count()} cores)"
    )
    base = k["python_pass_ms"]
    print(f"cold start, fresh process (median of {args.cold}; wall ms / CPU ms, ratio to python -c pass):")
    for name, label in (
        ("python_pass", "python -c pass"),
        ("guard_check", "frontdesk guard check -- git status"),
        ("guard_hook", "frontdesk guard hook"),
        ("fast_hook", "python -m frontdesk.cli.guard hook"),
    ):
        wall, cpu = k[f"{name}_ms"], k[f"{name}_cpu_ms"]
        print(f"  {label:38s} {wall:6.0f} / {cpu:5.0f}  ({wall / base:.1f}x wall)")
    print(f"secrets: {s['positives']} secret lines, {s['negatives']} benign lines")
    print(
        f"  ours:           recall {s['ours_recall']:.1%}, false positives {s['ours_fp']:.1%}, "
        f"{s['ours_us_per_line']:.1f} us/line"
    )
    print(
        f"  detect-secrets: recall {s['detect_secrets_recall']:.1%}, "
        f"false positives {s['detect_secrets_fp']:.1%}, "
        f"{s['detect_secrets_us_per_line']:.1f} us/line (+{s['detect_secrets_import_ms']:.0f} ms import)"
    )
    print(f"  union recall {s['union_recall']:.1%}; redact() on a 2 KB report: {s['redact_2kb_report_us']:.0f} us")
    print(
        f"  missed by detect-secrets ({len(s['missed_by_detect_secrets'])}): "  # type: ignore[arg-type]
        + "; ".join(s["missed_by_detect_secrets"][:8])
    )  # type: ignore[index]
    print(f"  missed by ours ({len(s['missed_by_ours'])}): " + "; ".join(s["missed_by_ours"]))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
