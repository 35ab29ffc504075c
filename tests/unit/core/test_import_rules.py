"""Layers import downwards only (docs/ARCHITECTURE.md, "Import rules"), checked over every module in src/.

Each module belongs to the layer of its longest matching prefix in LAYERS (top first). A module may import
its own layer and the layers below, never one above. Imports inside functions count too (a lazy import is
still a dependency). Known violations owned by other areas are listed in ALLOWED with a comment; the list only
shrinks: an entry that no longer occurs fails the test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("edge", ("cli", "shims", "mcp_server", "server", "configcheck", "demo", "api", "telemetry.routes")),
    ("plug-ins", ("guard", "memory", "policy", "agents", "sim", "telemetry", "storage", "backends.slurm.plugin")),
    ("core", ("gateway", "plugins", "core")),
    ("backends", ("backends",)),
    ("reports", ("reports",)),
    ("store", ("store",)),
    ("models", ("jobs", "spec", "events", "backends.base")),
    (
        "util",
        (
            "",
            "errors",
            "faults",
            "paths",
            "proc",
            "tails",
            "jobenv",
            "identity",
            "config",
            "client",
            "autostart",
            "tls",
        ),
    ),
]
"""Top to bottom. Prefixes are relative to `frontdesk` ("" is the package itself)."""

ALLOWED: dict[tuple[str, str], str] = {
    # (importer, imported): why it is still there and who removes it.
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC / "frontdesk").with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer(module: str) -> int:
    best, best_len = -1, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".") or prefix == ""
            if matches and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    return best


def _imports(path: Path, module: str) -> set[str]:
    out: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("frontdesk"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(["frontdesk", *base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            if name.startswith("frontdesk"):
                out.add(name)
    return {n.removeprefix("frontdesk").lstrip(".") for n in out}


def _violations() -> set[tuple[str, str]]:
    found = set()
    for path in sorted((SRC / "frontdesk").rglob("*.py")):
        module = _module_name(path)
        for target in _imports(path, module):
            if _layer(target) < _layer(module):  # a smaller rank is a higher layer
                found.add((module, target))
    return found


def test_layers_import_downwards_only() -> None:
    bad = _violations() - set(ALLOWED)
    lines = [f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})" for a, b in sorted(bad)]
    assert not bad, "imports from a lower layer to a higher one:\n" + "\n".join(lines)


def test_the_allowlist_only_shrinks() -> None:
    gone = set(ALLOWED) - _violations()
    assert not gone, f"fixed: remove these from ALLOWED in tests/unit/core/test_import_rules.py: {sorted(gone)}"


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    assert _layer("store.jobs") > _layer("backends.local") > _layer("gateway") > _layer("guard.secrets")
    assert _layer("jobs.state") > _layer("store.db")
    assert _layer("backends.base") == _layer("jobs.record")


def test_the_architecture_page_states_these_rules() -> None:
    doc = (SRC.parent / "docs" / "ARCHITECTURE.md").read_text()
    section = doc.split("## Import rules", 1)[1]
    rows = re.findall(r"^\| ([a-z-]+) \| (.+?) \|$", section, flags=re.M)
    rows = [r for r in rows if r[0] != "layer"]
    stated = {name: {m.strip().replace("the package itself", "") for m in mods.split(",")} for name, mods in rows}
    assert list(stated) == [name for name, _ in LAYERS]
    for name, prefixes in LAYERS:
        assert stated[name] == set(prefixes), name
