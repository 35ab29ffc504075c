"""Every frontdesk.toml table the code reads has a known-key list (configcheck.TABLES), and every key the code
reads by name is in it: the code is walked (ast), so a new table or key read without being declared fails here.
Then the check itself over real TOML text: which lines warn, which refuse, nested tables and free names."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from frontdesk.configcheck import REFUSED, TABLES, check_file

SRC = Path(__file__).resolve().parents[3] / "src" / "frontdesk"

PARAMS: dict[str, dict[str, str]] = {
    "identity.py": {"section": "access"},
    "api/authfail.py": {"section": "access"},
    "api/limits.py": {"section": "gateway"},
    "memory/scopes.py": {"section": "memory"},
    "guard/context.py": {"section": "guard"},
    "storage/forward.py": {"section": "storage"},
    "storage/plugin.py": {"section": "storage"},
    "backends/localgpu.py": {"local": "local"},
    "backends/slurm/config.py": {"raw": "slurm", "values": "slurm"},
    "core/quotas.py": {"section": "limits"},
}
"""Parsers that take a table as a parameter: module -> {parameter name: table}. (jobenv.site_filter,
BudgetConfig, AgentSettings and Retention read theirs only through the key lists the check uses: SITE_KEYS,
the dataclass's fields, JOURNAL_KEYS, which their parsers refuse others by.)"""


def _table_of(node: ast.AST | None) -> str | None:
    """The table an expression reads whole: `x.section("T")`, `guard_section(..)`, `site_gateway()`,
    `data.get("gateway", {})`, each maybe inside dict(...)."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id == "dict" and node.args:
        return _table_of(node.args[0])
    if isinstance(func, ast.Name) and func.id in ("guard_section", "site_gateway"):
        return {"guard_section": "guard", "site_gateway": "gateway"}[func.id]
    if isinstance(func, ast.Attribute) and node.args and isinstance(node.args[0], ast.Constant):
        name = node.args[0].value
        if func.attr == "section" or (func.attr == "get" and name in TABLES and _named(func.value, "data")):
            return str(name)
    return None


def _named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _reads(path: Path) -> tuple[set[str], set[tuple[str, str, int]]]:
    """The tables `path` reads, and (table, key, line) for each key read by name from one."""
    rel = str(path.relative_to(SRC))
    tree = ast.parse(path.read_text(), str(path))
    tables: set[str] = set()
    keys: set[tuple[str, str, int]] = set()
    for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)] + [tree]:
        bound = dict(PARAMS.get(rel, {})) if not isinstance(func, ast.Module) else {}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and (table := _table_of(node.value)):
                bound.update({t.id: table for t in node.targets if isinstance(t, ast.Name)})
        for node in ast.walk(func):
            if table := _table_of(node):
                tables.add(table)
            holder: ast.AST | None = None
            key: str | None = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                holder, key = node.func.value, _key(node.args[0]) if node.args else None
            elif isinstance(node, ast.Subscript):
                holder, key = node.value, _key(node.slice)
            elif isinstance(node, ast.Call) and len(node.args) >= 2:  # _seconds(section, "timeout_s", ...)
                holder, key = node.args[0], _key(node.args[1])
            elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
                holder, key = node.comparators[0], _key(node.left)
            table = bound.get(holder.id) if isinstance(holder, ast.Name) else _table_of(holder)
            if table and key:
                keys.add((table, key, node.lineno))
    return tables, keys


def _all_reads() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    tables: dict[str, set[str]] = {}
    keys: dict[tuple[str, str], str] = {}
    for path in sorted(SRC.rglob("*.py")):
        found, read = _reads(path)
        for table in found:
            tables.setdefault(table, set()).add(str(path.relative_to(SRC)))
        for table, key, line in read:
            keys.setdefault((table, key), f"{path.relative_to(SRC)}:{line}")
    return tables, keys


def test_every_table_the_code_reads_has_known_keys() -> None:
    tables, _ = _all_reads()
    assert {"gateway", "local", "access", "guard", "env", "memory", "storage", "journal", "telemetry"} <= set(tables)
    missing = {t: sorted(where) for t, where in tables.items() if t not in TABLES}
    assert not missing, f"tables read with no known-key list in configcheck.TABLES: {missing}"


def test_every_key_the_code_reads_is_known() -> None:
    _, keys = _all_reads()
    for must in [
        ("access", "admins"),
        ("guard", "ask_blocks_jobs"),
        ("storage", "agent_tls_ca"),
        ("gateway", "service_user"),
    ]:
        assert must in keys, f"the walk no longer sees {must}: it would pass anything"
    unknown = {f"[{t}] {k}": where for (t, k), where in keys.items() if t in TABLES and k not in TABLES[t].keys}
    assert not unknown, f"keys read but not declared next to their parser: {unknown}"


def test_every_parameter_mapping_still_reads_something() -> None:
    for rel in PARAMS:
        assert _reads(SRC / rel)[1], f"{rel}: no key read through {PARAMS[rel]} (renamed? update PARAMS)"


def _check(text: str) -> list[tuple[str, bool]]:
    return [(f.line, f.refuse) for f in check_file(Path("/etc/fd.toml"), tomllib.loads(text), frozenset({"site"}))]


@pytest.mark.parametrize(
    ("text", "line", "refuse"),
    [
        ('[access]\nadmin = ["alice"]\n', "/etc/fd.toml: [access] admin is not a setting: did you mean admins?", True),
        ("[guard]\nenabeld = false\n", "[guard] enabeld is not a setting: did you mean enabled?", True),
        ("[env]\ndeny_names = []\n", "[env] deny_names is not a setting: did you mean deny?", True),
        ('[gateway]\ntls_crt = "c.pem"\n', "[gateway] tls_crt is not a setting: did you mean tls_cert?", True),
        ("[gateway]\ntick_second = 1\n", "[gateway] tick_second is not a setting: did you mean tick_seconds?", False),
        (
            "[storage]\nagent_tls_cafile = 'x'\n",
            "[storage] agent_tls_cafile is not a setting: did you mean agent_tls_ca?",
            True,
        ),
        ("[storage]\nrat = 5\n", "[storage] rat is not a setting: did you mean rate?", False),
        (
            "[[storage.forward]]\nprefx = '/d'\n",
            "[[storage.forward]] prefx is not a setting: did you mean prefix?",
            False,
        ),
        ("[guard.partitions.debug]\npurpos = 'test'\n", "[guard.partitions.debug] purpos is not a setting", True),
        ("[memory.projects.p]\nuser = []\n", "[memory.projects.p] user is not a setting: did you mean users?", False),
        ("[slurm]\npartitions = 'x'\n", "[slurm] partitions is not a setting: did you mean partition?", True),
        ("[journal]\nmax_ages = '1d'\n", "[journal] max_ages is not a setting: did you mean max_age?", True),
        ("[telemetry]\nobserve = 'x'\n", "[telemetry] observe is not a setting: did you mean observe_db?", False),
        ("[acess]\nadmins = []\n", "[acess] is not a setting: did you mean [access]?", True),
        ("[gatway]\ntick_seconds = 1\n", "[gatway] is not a setting: did you mean [gateway]?", False),
        ("[zzz_qqq]\nx = 1\n", "[zzz_qqq] is not a setting", False),
        ("guard = 1\n", "guard = 1: expected a table [guard]", True),
    ],
)
def test_an_unknown_key_or_table_is_one_line(text: str, line: str, refuse: bool) -> None:
    found = _check(text)
    assert len(found) == 1 and line in found[0][0] and found[0][1] is refuse, found


def test_a_hostile_name_is_still_one_short_line() -> None:
    text = '[access]\n"ad\\nmin" = 1\n["guard\\n' + "x" * 500 + '"]\na = 1\n[memory.projects."p\\nq"]\nuser = 1\n'
    found = _check(text)
    assert len(found) == 3 and all("\n" not in line and len(line) < 200 for line, _ in found), found
    assert found[0] == ("/etc/fd.toml: [access] 'ad\\nmin' is not a setting: did you mean admins?", True)


def test_known_keys_free_names_site_tables_and_policy_pass() -> None:
    text = (
        '[gateway]\ntick_seconds = 1\n[gateway.tokens]\n"sha256:ab" = "alice"\n'
        '[access]\nadmins = ["root"]\n[access.labs]\nnlp = ["alice"]\n'
        '[guard.actions]\n"git.destructive" = "deny"\n[guard.partitions.debug]\npurpose = "test"\nmax_nodes = 2\n'
        '[[storage.forward]]\nprefix = "/d"\nagent = "h:1"\n[memory.projects.p]\nusers = ["a"]\npaths = ["/p"]\n'
        "[memory.projects]\nq = ['b']\n[site]\nanything = 1\n[policy]\nnot_a_policy_key = 1\n"
    )
    assert _check(text) == []


def test_refused_tables_are_the_security_ones_and_those_that_always_refused() -> None:
    assert {"access", "guard", "env"} <= REFUSED and {"limits", "agents", "policy", "journal", "slurm"} <= REFUSED
    assert not {"gateway", "local", "memory"} & REFUSED
