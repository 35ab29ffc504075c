"""Probe 21: a sweep value filled into shell text is literal text wherever its `{name}` sits, never code.

Before: values were filled one name after another (a value holding `{other}` got the other's value inside
its own quotes, so `''$(...)''` ran), only the word after a bare `-c` was quoted (`bash -lc TEXT` took the
value raw), and a `{name}` inside "..." or '...' got a quoted value that closed the user's quotes. Canaries:
`touch` of a file in the test's own directory, harmless if it ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

VALUES = [
    "$(touch {canary})",
    "`touch {canary}`",
    "'; touch {canary}; '",
    '"; touch {canary}; "',
    "a b  c",
    "it's",
    "x\\",
    "{other}",
    "é ☃ ünï",
    "--flag=1",
    "",
]


def _submit(gw: Any, spec: dict[str, Any], where: Path) -> Any:
    path = where / "spec.json"
    path.write_text(json.dumps(spec))
    return gw.cli("submit", "--json", str(path), cwd=where)


def _outputs(gw: Any, where: Path, spec: dict[str, Any]) -> list[str]:
    res = _submit(gw, spec, where)
    assert res.returncode == 0, res.stderr
    array_id = json.loads(res.stdout)["id"]
    rep = gw.client.wait([array_id], "all", 180)
    assert rep["done"], rep
    out = []
    for i in range(len(spec["sweep"])):
        logs = gw.cli("logs", f"{array_id}_{i}")
        assert logs.returncode == 0, logs.stderr
        out.append(logs.stdout)
    return out


def _points(canary: Path) -> list[dict[str, str]]:
    other = f"$(touch {canary})"
    return [{"v": v.replace("{canary}", str(canary)), "other": other} for v in VALUES]


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-lc", "printf '%s|' {v} \"{v}\" '{v}' \"pre {v} post\" $'{v}'; echo"],
        ["env", "LC_ALL=C.UTF-8", "sh", "-e", "-c", "printf '%s|' {v} \"{v}\" '{v}' \"pre {v} post\"; echo"],
        ["sh", "-c", "x=$(printf '%s' {v}); printf '%s|' \"$x\" \"$(printf '%s' \"{v}\")\"; echo"],
    ],
    ids=["bash-lc", "env-sh-e-c", "command-substitution"],
)
def test_values_are_literal_in_every_quoting_of_a_shell_command(
    gateway_factory: Any, tmp_path: Path, command: list[str]
) -> None:
    gw = gateway_factory()
    canary = tmp_path / "canary"
    points = _points(canary)
    outs = _outputs(gw, tmp_path, {"command": command, "sweep": points, "resources": {"walltime": "1m"}})
    assert not canary.exists(), "a sweep value ran as shell code"
    for point, out in zip(points, outs, strict=True):
        v = point["v"]
        words = out.rstrip("\n").split("|")[:-1]
        assert words and all(w == v or w == f"pre {v} post" for w in words), (v, out)


def test_values_are_literal_in_a_script_and_its_heredocs(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    canary = tmp_path / "canary"
    points = _points(canary)
    script = "#!/bin/sh\n# it's a comment with {v}\ncat <<EOF\n[{v}]\nEOF\ncat <<'END'\n({v})\nEND\necho \"<{v}>\"\n"
    outs = _outputs(gw, tmp_path, {"script": script, "sweep": points, "resources": {"walltime": "1m"}})
    assert not canary.exists(), "a sweep value ran as shell code"
    for point, out in zip(points, outs, strict=True):
        v = point["v"]
        assert out.splitlines()[-3:] == [f"[{v}]", f"({v})", f"<{v}>"], (v, out)


def test_a_value_that_cannot_be_quoted_where_it_sits_is_refused_and_nothing_stored(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = gateway_factory()
    canary = tmp_path / "canary"
    for command in (["sh", "-c", "echo `echo {v}`"], ["sh", "-c", "echo ${UNSET:-{v}}"]):
        res = _submit(gw, {"command": command, "sweep": {"v": ["ok", f"$(touch {canary})"]}}, tmp_path)
        assert res.returncode == 2, res.stdout + res.stderr
        err = res.stderr.strip()
        assert "\n" not in err and "has shell characters" in err, err
    plain = _submit(gw, {"command": ["sh", "-c", "echo `echo {v}`"], "sweep": {"v": ["ok", "1e-3"]}}, tmp_path)
    assert plain.returncode == 0, plain.stderr  # plain values need no quoting anywhere
    jobs = json.loads(gw.cli("jobs", "--json").stdout)
    assert [j["id"] for j in jobs] == [json.loads(plain.stdout)["id"]]
    assert not canary.exists()
