"""Rules are data: a site file extends them, `disable` switches one off, `actions` changes one."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.config import load_settings
from frontdesk.errors import ConfigError
from frontdesk.guard.checker import check
from frontdesk.guard.context import context_from_settings
from frontdesk.guard.model import Decision, GuardContext
from frontdesk.guard.rules import TARGETS, load_rules

SITE_RULES = """
[aliases]
lfs = { R = "recursive" }

[[rule]]
id = "site.lfs-setstripe-root"
action = "deny"
programs = ["lfs"]
subcommand = ["setstripe"]
targets_any = ["scratch"]
args_regex = '-c -1'
reason = "striping over every OST on scratch"
alternative = "lfs setstripe -c 4"
"""


def _ctx(rules: object = None) -> GuardContext:
    return GuardContext(env={"HOME": "/home/a"}, cwd="/home/a/p", home="/home/a", rules=rules)


def test_site_file_adds_a_rule(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text(SITE_RULES)
    rules = load_rules([site])
    verdict = check("lfs setstripe -c -1 /scratch/a/big", _ctx(rules))
    assert (verdict.decision, verdict.rule) == (Decision.DENY, "site.lfs-setstripe-root")
    assert verdict.alternative == "lfs setstripe -c 4"
    assert check("lfs setstripe -c 4 /scratch/a/big", _ctx(rules)).decision is Decision.ALLOW


def test_disable_and_actions() -> None:
    assert check("sudo make install", _ctx()).rule == "priv.sudo"
    assert check("sudo make install", _ctx(load_rules(disable=["priv.sudo"]))).decision is Decision.ALLOW
    strict = load_rules(actions={"git.destructive": "deny"})
    assert check("git reset --hard", _ctx(strict)).decision is Decision.DENY


def test_settings_wire_rules_and_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "site.toml").write_text(SITE_RULES)
    (tmp_path / "frontdesk.toml").write_text(
        '[guard]\nnode_role = "login"\nrules_file = "site.toml"\ndisable = ["priv.sudo"]\n'
        'shared_paths = ["/proj"]\nscratch_roots = ["/lus/scratch"]\n'
        '[guard.actions]\n"git.destructive" = "deny"\n'
        '[guard.partitions.short]\npurpose = "test"\nmax_time = "00:30:00"\n'
    )
    monkeypatch.setenv("FRONTDESK_HOME", str(tmp_path))
    monkeypatch.delenv("FRONTDESK_NODE_ROLE", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    ctx = context_from_settings(load_settings(), with_taint=False)
    assert str(ctx.node_role) == "login" and ctx.shared_paths == ("/proj",)
    assert "/lus/scratch" in ctx.scratch_roots and ctx.partitions["short"].max_time_s == 1800
    assert check("sudo ls", ctx).decision is Decision.ALLOW
    assert check("git reset --hard", ctx).decision is Decision.DENY
    assert check("lfs setstripe -c -1 /lus/scratch/x", ctx).rule == "site.lfs-setstripe-root"
    assert check("sbatch -p short -t 5:00:00 x.sh", ctx).rule == "slurm.test-partition"
    assert check("python train.py", ctx).rule == "login.heavy-compute"


@pytest.mark.parametrize(
    "bad",
    [
        '[[rule]]\nid = "x"\nreason = "r"\nprogramz = ["a"]\n',
        '[[rule]]\nid = "x"\nreason = "r"\ntargets_any = ["moon"]\n',
        '[[rule]]\nid = "x"\nreason = "r"\naction = "maybe"\n',
        '[[rule]]\nreason = "r"\n',
    ],
)
def test_bad_site_rules_are_refused_with_the_field(tmp_path: Path, bad: str) -> None:
    site = tmp_path / "bad.toml"
    site.write_text(bad)
    with pytest.raises(ValueError):
        load_rules([site])


def test_bad_settings_become_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "frontdesk.toml").write_text('[guard]\nrules_file = "missing.toml"\n')
    monkeypatch.setenv("FRONTDESK_HOME", str(tmp_path))
    with pytest.raises(ConfigError):
        context_from_settings(load_settings(), with_taint=False)


def test_targets_documented_in_the_rule_file() -> None:
    header = (Path(__file__).resolve().parents[3] / "src/frontdesk/guard/rules.toml").read_text()[:3000]
    for target in TARGETS:
        assert target in header
