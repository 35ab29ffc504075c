"""Numeric settings are checked for range, not only type: `tick_seconds = 0` or `-1` (or FRONTDESK_TICK=0) made
the gateway's tick a busy loop (a core's worth of CPU while idle), `nan` or `inf` a tick that never ran; a
report budget of 0 bytes was taken; a plug-in name with a typo (`gaurd`) ran the gateway without the guard, and
`plugins = "guard"` matched names by substring. Now `frontdesk serve` refuses them in one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from serve_helpers import serve_refused

BAD = [
    ("[gateway]\ntick_seconds = 0\n", {}),
    ("[gateway]\ntick_seconds = -1\n", {}),
    ("[gateway]\ntick_seconds = nan\n", {}),
    ("[gateway]\ntick_seconds = inf\n", {}),
    ("", {"FRONTDESK_TICK": "0"}),
    ("[gateway]\nreport_max_bytes = 0\n", {}),
    ("[local]\ncpus = 0\n", {}),
    ('[gateway]\nplugins = ["gaurd", "memory"]\n', {}),
    ('[gateway]\nplugins = "guard"\n', {}),
    ("", {"FRONTDESK_PLUGINS": "gaurd"}),
]


@pytest.mark.parametrize(("config", "env"), BAD, ids=[f"{c.strip()}{e}" for c, e in BAD])
def test_serve_refuses_an_out_of_range_setting(tmp_path: Path, config: str, env: dict[str, str]) -> None:
    out = serve_refused(tmp_path, config, env, timeout=20)
    assert out.returncode == 2, out.stderr[-500:]
    assert out.stderr.count("\n") == 1, out.stderr
    assert "expected a number from" in out.stderr or "[gateway] plugins: " in out.stderr, out.stderr
