"""Probe 21: hostile `array` expressions and oversized arrays are refused with one line, nothing stored.

Before: `０-９` and `%٣` (digits Python reads, sbatch refuses) made arrays, `%99999999999999999999999` was kept
and shown as the array's limit (and given to sbatch), a 1,500-digit index was quoted whole in the error
line, and a 65 KB script in a 1,000-task array wrote 70 MB into the database in one transaction (each task
keeps its own spec), 1 MB of body making 10 GB at 10,000 tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFUSED = [
    ("０-９", "is not an index"),
    ("٣", "is not an index"),
    ("0-9%٣", "whole number"),
    ("0-9%99999999999999999999999", "at most 10000"),
    ("9" * 1500, "over the largest allowed"),
    ("0-9:" + "9" * 1900 + "%2", None),  # a huge step is one task: accepted below, not refused
    ("0-4294967296", "over the largest allowed"),
    ("0-999999", "more than 10000 tasks"),
    ("%8", "expected task indices"),
    ("0-9%0", "whole number"),
    ("-1", "is not an index"),
    ("0 - 9", "is not an index"),
]


def _ids(gw: Any) -> list[int]:
    return sorted(j["id"] for j in gw.client.jobs(limit=1000))


def test_hostile_array_expressions_are_one_line_and_store_nothing(gateway_factory: Any) -> None:
    gw = gateway_factory()
    for expr, why in REFUSED:
        before = _ids(gw)
        res = gw.cli("run", "--json", "--array", expr, "--", "true")
        if why is None:
            assert res.returncode == 0, res.stderr
            assert json.loads(res.stdout)["array"]["size"] == 1
            continue
        assert res.returncode == 2, (expr[:20], res.stdout + res.stderr)
        err = res.stderr.strip()
        assert len(err.splitlines()) == 1 and why in err and len(err) < 400, (expr[:20], err)
        assert _ids(gw) == before
    assert gw.client.health()


def test_an_array_that_would_store_too_much_is_refused(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    script = "#!/bin/sh\n" + "# a long comment line to make the script big ............................\n" * 900
    spec = tmp_path / "big.json"
    before = _ids(gw)
    spec.write_text(json.dumps({"script": script + "true\n", "array": "0-1999"}))
    res = gw.cli("submit", str(spec))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "MiB" in res.stderr and "put the script in a file" in res.stderr and len(res.stderr.splitlines()) == 1
    sweep = {"script": "echo {v}\n", "sweep": {"v": ["x" * 1000], "w": list(range(2000))}}
    spec.write_text(json.dumps({**sweep, "script": "echo {v} {v} {v} {v} {v} {v} {v} {v}\n"}))
    res = gw.cli("submit", str(spec))  # small template, large values: counted as filled
    assert res.returncode == 2 and "MiB" in res.stderr, res.stdout + res.stderr
    assert _ids(gw) == before
    spec.write_text(json.dumps({"script": script + "true\n", "array": "0-9"}))
    assert gw.cli("submit", str(spec)).returncode == 0  # the same script in a small array is fine
