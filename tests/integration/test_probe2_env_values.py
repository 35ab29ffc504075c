"""Numbers and sizes from FRONTDESK_* variables and frontdesk.toml strings are ASCII and checked before the
gateway starts: `frontdesk serve` refuses them in one line, exit 2. Before: FRONTDESK_LOCAL_CPUS=١٢ (Arabic-Indic
digits) ran a 12-core gateway and FRONTDESK_TICK=1_0 a 10 s tick (str.isdigit and float() take them), and a
bad size (FRONTDESK_LOCAL_MEMORY=nan or -5G, [local] output_max_bytes = "lots") was a traceback, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from serve_helpers import serve_refused

BAD = [
    ("", {"FRONTDESK_LOCAL_CPUS": "\u0661\u0662"}),
    ("", {"FRONTDESK_LOCAL_CPUS": "\uff14"}),
    ("", {"FRONTDESK_TICK": "\u0661"}),
    ("", {"FRONTDESK_TICK": "1_0"}),
    ('[local]\ncpus = "\u0663"\n', {}),
    ("", {"FRONTDESK_LOCAL_MEMORY": "nan"}),
    ("", {"FRONTDESK_LOCAL_MEMORY": "-5G"}),
    ("", {"FRONTDESK_LOCAL_MEMORY": "0"}),
    ('[local]\nmemory = "lots"\n', {}),
    ('[local]\noutput_max_bytes = "lots"\n', {}),
]


@pytest.mark.parametrize(("config", "env"), BAD, ids=[f"{c.strip()}{e}" for c, e in BAD])
def test_serve_refuses_a_number_it_would_misread(tmp_path: Path, config: str, env: dict[str, str]) -> None:
    out = serve_refused(tmp_path, config, env, timeout=20)
    assert out.returncode == 2, out.stderr[-500:]
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("frontdesk: "), out.stderr
