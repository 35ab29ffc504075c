"""`frontdesk shim install DIR --fs`: grep/rg/find/du on PATH route recursive work through the gateway's storage
operators (counted in the caller's metadata budget) and pass everything else to the real tool unchanged.

Real gateway, real wrappers run by `sh` as an agent's shell would, the real grep/find/du beside them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from debian import need


def _tree(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "src" / "a.py").write_text("import torch\nx = 1\n")
    (root / "src" / "pkg" / "b.py").write_text("# no match here\nimport numpy\n")
    (root / "logs" / "run.log").write_text("step 1 loss=0.5\nCUDA out of memory\n")
    (root / ".hidden.txt").write_text("import torch  # hidden\n")
    return root


def _install(gw: Any, tmp: Path) -> tuple[Path, dict[str, str]]:
    shims = tmp / "shims"
    r = gw.cli("shim", "install", str(shims), "--fs", "--json")
    assert r.returncode == 0, r.stderr
    names = {Path(p).name for p in json.loads(r.stdout)["shims"]}
    assert {"grep", "find", "du"} <= names
    env = {**gw.env, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}", "FRONTDESK_SESSION": "fs-wrap"}
    return shims, env


def _sh(cmd: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def _spent(gw: Any) -> int:
    rows = gw.client.request("GET", "/v1/fs/budget")["principals"]
    return sum(int(r.get("admitted", 0) or 0) for r in rows if r.get("session") == "fs-wrap")


def _sorted(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line)


def test_recursive_grep_goes_through_the_gateway_and_answers_as_grep_does(gateway: Any, tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    shims, env = _install(gateway, tmp_path)
    before = _spent(gateway)
    wrapped = _sh("grep -rn 'import torch' .", env, root)
    real = subprocess.run(["grep", "-rn", "import torch", "."], cwd=root, capture_output=True, text=True)
    assert wrapped.returncode == 0, wrapped.stderr
    assert _sorted(wrapped.stdout) == _sorted(real.stdout)
    assert _spent(gateway) == before + 1  # the gateway answered it, in this session's budget

    none = _sh("grep -r no-such-text-anywhere .", env, root)
    assert none.returncode == 1 and none.stdout == ""


def test_simple_and_unsupported_calls_run_the_real_tool(gateway: Any, tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    shims, env = _install(gateway, tmp_path)
    before = _spent(gateway)
    one = _sh("grep -n torch src/a.py", env, root)  # not recursive: the real grep, no Python started
    assert one.returncode == 0 and one.stdout == "1:import torch\n"
    # find with an action the operators lack runs the real find: deletions confined to this temp tree.
    (root / "logs" / "old.tmp").write_text("x")
    sentinel = root / "logs" / "run.log"
    gone = _sh("find logs -name '*.tmp' -delete", env, root)
    assert gone.returncode == 0 and not (root / "logs" / "old.tmp").exists() and sentinel.exists()
    assert _spent(gateway) == before  # neither reached the gateway
    pcre = _sh("grep -rP 'loss=\\d' logs", env, root)  # -P: the operator refuses it -> the real grep answers
    assert pcre.returncode == 0 and pcre.stdout == "logs/run.log:step 1 loss=0.5\n", pcre.stderr


def test_find_and_du_match_the_real_tools(gateway: Any, tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    shims, env = _install(gateway, tmp_path)
    before = _spent(gateway)
    for cmd in ("find . -name '*.py'", "find . -type d", "du -s src", "du -a logs"):
        wrapped = _sh(cmd, env, root)
        real = _sh(cmd, {**env, "PATH": os.environ["PATH"]}, root)
        assert wrapped.returncode == real.returncode == 0, (cmd, wrapped.stderr)
        assert _sorted(wrapped.stdout) == _sorted(real.stdout), cmd
    assert _spent(gateway) == before + 4


def test_an_empty_budget_is_one_line_and_exit_75(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(config="[storage]\nrate = 0.001\nburst = 3\n")
    root = _tree(tmp_path / "t")
    shims, env = _install(gw, tmp_path)
    codes = [_sh("grep -r torch .", env, root) for _ in range(6)]
    refused = [r for r in codes if r.returncode == 75]
    assert refused, [(r.returncode, r.stderr) for r in codes]
    assert refused[0].stdout == "" and refused[0].stderr.count("\n") == 1
    assert "retry after" in refused[0].stderr


def test_without_a_gateway_the_real_tool_answers(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    shims = tmp_path / "shims"
    from frontdesk.cli.slurm import install_fs_wrappers

    install_fs_wrappers(shims, python=sys.executable)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")},
        "FRONTDESK_HOME": str(tmp_path / "nohome"),
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
    }
    r = _sh("grep -rl torch .", env, root)
    assert r.returncode == 0 and _sorted(r.stdout) == ["./.hidden.txt", "./src/a.py"]
    assert not (tmp_path / "nohome" / "run" / "gateway.sock").exists()  # no gateway was started for it


@pytest.mark.skipif(need("rg", "ripgrep") is None, reason="ripgrep is missing and cannot be installed (not root)")
def test_rg_keeps_its_ignore_rules_unless_told_otherwise(gateway: Any, tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    shims, env = _install(gateway, tmp_path)
    before = _spent(gateway)
    plain = _sh("rg -l torch", env, root)  # the real rg: hidden files skipped
    assert _sorted(plain.stdout) == ["src/a.py"]
    assert _spent(gateway) == before
    everything = _sh("rg -uu -l torch .", env, root)
    assert _sorted(everything.stdout) == ["./.hidden.txt", "./src/a.py"]
    assert _spent(gateway) == before + 1
