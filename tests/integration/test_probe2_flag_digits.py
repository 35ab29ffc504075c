"""A number flag of the real CLI is ASCII decimal: `frontdesk run --cpus ٤` (Arabic-Indic four) queued a 4-core
job and `frontdesk status ١٢` asked for job 12, `--limit 1_0` meant 10 (argparse's int() and float() take any
script's digits and underscores). Now exit 2 with one line (the JSON error object with --json) and nothing is
queued; the same characters after `--` are the job's own words and still run."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

CASES = [
    ["run", "--cpus", "\u0664", "--", "true"],
    ["run", "--cpus", "\uff14", "--", "true"],
    ["status", "\u0661\u0662"],
    ["events", "--limit", "1_0"],
    ["wait", "1", "--timeout", "\u0661"],
    ["simulate", "validation", "--seed", "\u0661"],
]


def _cli(gw: Any, args: list[str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "frontdesk.cli.main", *args]
    return subprocess.run(argv, env=gw.env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a)[:40])
def test_a_number_flag_in_other_digits_is_refused(gateway: Any, args: list[str]) -> None:
    plain = _cli(gateway, args)
    assert plain.returncode == 2, (plain.returncode, plain.stdout[-300:], plain.stderr[-300:])
    bad = next(a for a in args if not a.isascii() or "_" in a)
    assert plain.stderr.count("\n") == 1 and repr(bad) in plain.stderr, plain.stderr
    js = _cli(gateway, [args[0], "--json", *args[1:]])
    assert js.returncode == 2 and json.loads(js.stdout.splitlines()[0])["error"] == "bad_input", js.stdout
    assert gateway.client.request("GET", "/v1/jobs") == []


def test_the_same_digits_after_the_separator_are_the_jobs_words(gateway: Any) -> None:
    r = _cli(gateway, ["run", "--json", "--cpus", "1", "--", "echo", "\u0661\u0662"])
    assert r.returncode == 0, r.stderr
    assert [j["id"] for j in gateway.client.request("GET", "/v1/jobs")] == [json.loads(r.stdout)["id"]]
