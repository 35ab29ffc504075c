"""Probe 21: a GPU count or share is ASCII digits: `٠.٥` and `1_0`, which float() reads, are refused with one line.

Before: `--gpus ٠.٥` (Arabic-Indic digits) became a half-GPU share and `--gpus 1_0` ten whole GPUs, on the
command line and in a spec alike; sbatch and every reader of the spec take neither.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def test_non_ascii_or_underscored_gpu_counts_are_refused(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    for text in ("٠.٥", "1_0", "０.２５"):
        res = gw.cli("run", "--gpus", text, "--", "true")
        assert res.returncode == 2, (text, res.stdout + res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"command": ["true"], "resources": {"gpus": text}}))
        res = gw.cli("submit", str(spec))
        assert res.returncode == 2 and "gpus" in res.stderr, (text, res.stdout + res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert gw.client.jobs(limit=10) == []
    ok = gw.cli("run", "--json", "--gpus", "0.25", "--", "true")  # the ASCII share still goes through
    assert ok.returncode == 0 and json.loads(ok.stdout)["spec"]["resources"]["gpu"]["share"] == 0.25, ok.stderr
