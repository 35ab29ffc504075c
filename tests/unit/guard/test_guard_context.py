"""Node role: the site setting, overridden by FRONTDESK_NODE_ROLE, and `compute` inside a Slurm job."""

from __future__ import annotations

import pytest

from frontdesk.errors import ConfigError
from frontdesk.guard.checker import check
from frontdesk.guard.context import node_role
from frontdesk.guard.model import Decision, GuardContext, NodeRole


@pytest.mark.parametrize(
    ("section", "env", "role"),
    [
        ({}, {}, "workstation"),
        ({"node_role": "login"}, {}, "login"),
        ({"node_role": "login"}, {"SLURM_JOB_ID": "42"}, "compute"),
        ({"node_role": "login"}, {"FRONTDESK_NODE_ROLE": "workstation"}, "workstation"),
        ({}, {"FRONTDESK_NODE_ROLE": "LOGIN", "SLURM_JOB_ID": "1"}, "login"),
    ],
)
def test_role_resolution(section: dict[str, str], env: dict[str, str], role: str) -> None:
    assert str(node_role(section, env)) == role


def test_bad_role_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        node_role({"node_role": "moon"}, {})


def test_heavy_work_is_asked_only_on_login_nodes() -> None:
    for role, expected in (
        (NodeRole.LOGIN, Decision.ASK),
        (NodeRole.COMPUTE, Decision.ALLOW),
        (NodeRole.WORKSTATION, Decision.ALLOW),
    ):
        ctx = GuardContext(node_role=role, env={}, cwd="/w", home="/h")
        assert check("torchrun --nproc_per_node=8 train.py", ctx).decision is expected
    login = GuardContext(node_role=NodeRole.LOGIN, env={}, cwd="/w", home="/h")
    verdict = check("torchrun train.py", login)
    assert verdict.alternative and "srun" in verdict.alternative
    assert check("srun --gres=gpu:1 torchrun train.py", login).decision is Decision.ALLOW


def test_unset_variable_uses_the_current_environment() -> None:
    ctx = GuardContext(env={"BUILD": "/w/build"}, cwd="/w", home="/h")
    assert check("rm -rf $BUILD/", ctx).decision is Decision.ALLOW
    verdict = check("rm -rf $BIULD/", ctx)
    assert verdict.decision is Decision.DENY and verdict.rule == "fs.rm-unset-var"
    assert verdict.alternative and ":?" in verdict.alternative
    assert check('rm -rf "${BIULD:?}/"', ctx).decision is Decision.ALLOW
