"""The [policy] table: defaults, durations and sizes, and refusal of the whole table on any error."""

from __future__ import annotations

import pytest

from frontdesk.errors import ConfigError
from frontdesk.policy.config import parse_policy


def test_empty_table_is_a_working_policy() -> None:
    cfg = parse_policy({})
    assert cfg.pools[0].name == "default"
    assert cfg.priority.classes["agent"].drop_after == 30
    assert cfg.priority.classes["training"].age_every == 600
    assert cfg.priority.classes["hpc"].enter < cfg.priority.classes["agent"].enter


def test_units_and_partial_class_overrides() -> None:
    cfg = parse_policy(
        {
            "classify": {"agent_max_walltime": "20m", "training_min_walltime": "3h"},
            "trial": {"walltime_cap": "5m", "max_memory": "8G", "cooldown": "2h"},
            "priority": {"classes": {"agent": {"drop_after": "1m"}}},
        }
    )
    assert cfg.classify.agent_max_walltime == 1200 and cfg.classify.training_min_walltime == 3 * 3600
    assert cfg.trial.walltime_cap == 300 and cfg.trial.max_memory == 8 * 1024**3 and cfg.trial.cooldown == 7200
    assert cfg.priority.classes["agent"].drop_after == 60 and cfg.priority.classes["agent"].enter == 3
    assert "training" in cfg.priority.classes


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"pools": [{"name": "a", "classes": ["wizard"]}]}, "pools.0.classes"),
        ({"pools": [{"name": "a"}, {"name": "a"}]}, "pools"),
        ({"borrow": [{"lender": "nope", "borrower": "default"}]}, "borrow"),
        ({"trial": {"rate": 0}}, "trial.rate"),
        ({"pools": [{"name": "a", "cpu_oversubscribe": 0.5}]}, "pools.0.cpu_oversubscribe"),
        ({"surprise": 1}, "surprise"),
        ({"borrow": [{"lender": "default", "borrower": "default", "classes": ["hpc"]}]}, "never preempted"),
    ],
)
def test_invalid_table_refused_whole_with_field(raw: dict, field: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_policy(raw, "frontdesk.toml")
    assert exc.value.message.startswith("frontdesk.toml: ")
    assert field in exc.value.message
