"""A misspelt security setting never passes silently: `frontdesk serve` with an unknown key in `[access]`,
`[guard]`, `[env]` (or a near miss of a TLS key, a misspelt `[access]` table, a nested `[guard.partitions.X]`
key) exits 2 with one line naming the file, the table, the key and the nearest known name, before it binds or
locks anything. `[access] admin = ["alice"]` ran with root alone as admin; `[guard] enabeld = false` with the guard
on. Real `frontdesk serve` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from serve_helpers import serve_env, serve_refused


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[access]\nadmin = ["alice"]\n', "[access] admin is not a setting: did you mean admins?"),
        ("[guard]\nenabeld = false\n", "[guard] enabeld is not a setting: did you mean enabled?"),
        ('[env]\ndenny = ["HF_TOKEN"]\n', "[env] denny is not a setting: did you mean deny?"),
        ('[gateway]\ntls_crt = "/etc/cert.pem"\n', "[gateway] tls_crt is not a setting: did you mean tls_cert?"),
        ('[acess]\nadmins = ["alice"]\n', "[acess] is not a setting: did you mean [access]?"),
        ('[guard.partitions.debug]\npurpos = "test"\n', "[guard.partitions.debug] purpos is not a setting"),
        ("[limits]\njobs_per_usr = 5\n", "[limits] jobs_per_usr is not a setting: did you mean jobs_per_user?"),
    ],
)
def test_a_misspelt_security_setting_refuses_the_start(tmp_path: Path, text: str, named: str) -> None:
    config = tmp_path / "frontdesk.toml"
    config.write_text(text)
    res = serve_refused(tmp_path)
    code, err = res.returncode, res.stderr
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"frontdesk: {config}: ") and named in lines[0], err
    assert not list(tmp_path.rglob("*.sock")) and not (tmp_path / "frontdesk.db").exists(), "it started something"


def test_the_site_config_is_named_when_the_typo_is_there(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text('[access]\nadmins_grup = "hpcadmin"\n')
    home = tmp_path / "home"
    home.mkdir()
    res = serve_refused(home, env={"FRONTDESK_SITE_CONFIG": str(site)})
    code, err = res.returncode, res.stderr
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"{site}: [access] admins_grup" in lines[0] and "admins_group" in lines[0], err


def test_the_same_settings_spelt_right_start(tmp_path: Path) -> None:
    """The control: every key above spelt right, and the gateway comes up (checked, then stopped)."""
    (tmp_path / "frontdesk.toml").write_text(
        '[access]\nadmins = ["alice"]\n[guard]\nenabled = true\n[env]\ndeny = ["HF_TOKEN"]\n'
        '[guard.partitions.debug]\npurpose = "test"\n[limits]\njobs_per_user = 5\n'
    )
    cmd = [sys.executable, "-m", "frontdesk.cli.main", "serve", "--json"]
    proc = subprocess.Popen(cmd, env=serve_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the announcement: the gateway is listening
        assert '"socket"' in line, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "is not a setting" not in err, err


def _guard(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    for key in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG", "FRONTDESK_URL", "FRONTDESK_SOCKET"):
        full.pop(key, None)
    cmd = [sys.executable, "-m", "frontdesk.cli.main", "guard", *args]
    return subprocess.run(cmd, env=full, capture_output=True, text=True, input=stdin, timeout=60)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            '[guard]\nproject_root = ["~/thesis"]\n',
            "[guard] project_root is not a setting: did you mean project_roots?",
        ),
        ('[guard.partitions.debug]\npurpos = "test"\n', "[guard.partitions.debug] purpos is not a setting"),
    ],
)
def test_the_guard_without_a_gateway_refuses_a_misspelt_key_too(tmp_path: Path, text: str, named: str) -> None:
    """`frontdesk guard check` and the PreToolUse hook read [guard] themselves: a typo is exit 78 (bad
    configuration) in one line, and the hook asks, naming it, rather than checking without the setting."""
    (tmp_path / "frontdesk.toml").write_text(text)
    res = _guard(tmp_path, "check", "--", "ls")
    assert res.returncode == 78 and res.stderr.count("\n") == 1 and named in res.stderr, res.stderr
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": str(tmp_path)})
    hook = _guard(tmp_path, "hook", stdin=payload)
    out = json.loads(hook.stdout)["hookSpecificOutput"]
    assert hook.returncode == 0 and out["permissionDecision"] == "ask" and named in out["permissionDecisionReason"]
    (tmp_path / "frontdesk.toml").write_text(
        text.replace("project_root ", "project_roots ").replace("purpos", "purpose")
    )
    assert _guard(tmp_path, "check", "--", "ls").returncode == 0  # the control: spelt right, allowed


def test_a_running_gateway_keeps_its_settings_when_the_file_gains_a_typo(gateway_factory: Any) -> None:
    """Only [policy] is read again while the gateway runs: a reload of a misspelt [policy] is refused (exit 2,
    naming the nearest field) and the version in force stays; a misspelt [access] changes nothing until the next
    start, which it refuses in one line."""
    good = '[access]\nadmins = ["root"]\n[policy.suspend]\nenabled = false\n'
    gw = gateway_factory(config=good)
    (gw.home / "frontdesk.toml").write_text(good.replace("admins", "admin").replace("enabled", "enabeld"))
    r = gw.cli("policy", "reload")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "suspend.enabeld" in r.stderr and "did you mean enabled?" in r.stderr, r.stderr
    assert gw.client.health()["ok"]
    show = json.loads(gw.cli("policy", "show", "--json").stdout)
    assert show["version"] == 1 and show["config"]["suspend"]["enabled"] is False
    with pytest.raises(RuntimeError, match="did not start"):
        gw.restart()
    assert "[access] admin is not a setting: did you mean admins?" in gw.log()
