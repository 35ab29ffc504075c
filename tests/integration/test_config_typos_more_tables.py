"""The config typo check covers [memory] too (memory/plugin.py and memory/scopes.py read its keys): a near-miss
key is one warning line naming the setting (a key close to none names the nearest), the gateway still starts;
its real keys warn nothing."""

from __future__ import annotations

from typing import Any


def test_a_misspelt_memory_key_is_reported(gateway_factory: Any) -> None:
    gw = gateway_factory(config='[memory]\nstale_afer = "30d"\nsite_threshold = 3\nsite_own_thing = 1\n')
    assert gw.client.health()["ok"]
    warnings = [line for line in gw.log().splitlines() if "is not a setting" in line]
    assert len(warnings) == 2, warnings
    assert "[memory] stale_afer" in warnings[0] and "did you mean stale_after?" in warnings[0], warnings
    assert "[memory] site_own_thing" in warnings[1], warnings


def test_the_memory_keys_warn_nothing(gateway_factory: Any) -> None:
    gw = gateway_factory(config='[memory]\nstale_after = "30d"\nsite_threshold = 3\nunix_groups = true\n')
    assert gw.client.health()["ok"]
    assert "is not a setting" not in gw.log()
