"""The CLI's fast path: every top-level command maps to the module that registers it."""

from __future__ import annotations

import argparse
import importlib

from frontdesk.cli.main import COMMAND_MODULES, COMMAND_TO_MODULE


def _registered() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        module.register(sub)
        for command in sub.choices:
            assert command not in out, f"{command} registered by {out.get(command)} and {name}"
            out[command] = name
    return out


def test_every_command_is_mapped_to_its_module() -> None:
    assert _registered() == COMMAND_TO_MODULE
