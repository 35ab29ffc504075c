"""A misspelt key or table in frontdesk.toml is reported when the gateway starts (one warning line naming the
near setting), where it was silently ignored: `tick_second = 1` ran the default tick, `[gatway]` a gateway
without its settings. A key close to no setting is reported too, naming the nearest (no site plug-in reads a
built-in table); these tables warn, the gateway still starts."""

from __future__ import annotations

from typing import Any

CONFIG = '[gateway]\ntick_second = 1\nplugin = []\n\n[locl]\ncpus = 2\n\n[local]\nmemroy = "4G"\nsite_thing = 1\n'


def test_typos_in_the_config_are_reported_and_the_gateway_runs(gateway_factory: Any) -> None:
    gw = gateway_factory(config=CONFIG)
    assert gw.client.health()["ok"]
    warnings = [line for line in gw.log().splitlines() if "is not a setting" in line]
    assert any("[gateway] tick_second" in w and "tick_seconds" in w for w in warnings), warnings
    assert any("[gateway] plugin " in w and "plugins" in w for w in warnings), warnings
    assert any("[locl]" in w and "[local]" in w for w in warnings), warnings
    assert any("[local] memroy" in w and "memory" in w for w in warnings), warnings
    assert any("[local] site_thing" in w and "did you mean" in w for w in warnings), warnings
    assert len(warnings) == 5, warnings


def test_a_config_of_known_keys_warns_nothing(gateway_factory: Any) -> None:
    gw = gateway_factory(config='[gateway]\ntick_seconds = 1\n\n[local]\ncpus = 2\nmemory = "4G"\n')
    assert gw.client.health()["ok"]
    assert "is not a setting" not in gw.log()
