"""The plug-in over a real database and the gateway's real JobStore: admission notices and redaction."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from frontdesk.config import Settings
from frontdesk.memory.classify import classify
from frontdesk.memory.plugin import MemoryPlugin
from frontdesk.plugins import SubmitContext
from frontdesk.spec.model import validate_spec
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def _plugin(tmp_path: Path) -> MemoryPlugin:
    settings = Settings(
        home=tmp_path,
        runtime_dir=tmp_path,
        socket=tmp_path / "s",
        sections={"memory": {"unix_groups": False, "labs": {"physics": ["alice"]}}},
    )
    plugin = MemoryPlugin(settings)
    # a database opened before the plug-in was imported: attach must create the memory tables itself
    conn = open_db(tmp_path / "other.db")
    conn.execute("DROP TABLE memory_runs")
    conn.execute("DELETE FROM schema_versions WHERE component='memory'")
    conn.execute("DROP TABLE memory_lessons")
    conn.execute("DROP TABLE memory_fts")
    plugin.attach(SimpleNamespace(store=JobStore(conn), publish=lambda event: event))
    return plugin


def test_admission_tells_the_owner_and_redacts_secrets_in_templates(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    spec = validate_spec({"command": ["python", "/home/alice/t.py", "--token", TOKEN], "resources": {"memory": "4G"}})
    ctx = plugin._context(spec.model_dump(mode="json", exclude_none=True), None, None, None)
    assert TOKEN not in ctx.template and "«redacted:github-token:" in ctx.template
    assert plugin.store is not None
    sig = classify("", "OUT_OF_MEMORY")
    plugin.store.record_run(1, "alice", ctx, "OUT_OF_MEMORY", sig, {})
    plugin.store.record_failure(1, "alice", ctx, sig)
    admission = plugin.admit(spec, SubmitContext(principal="alice"))
    assert admission is not None
    [notice] = admission.notices
    assert notice.source == "memory" and notice.data["fact"] is True
    assert notice.text.startswith("memory: this command ended OUT_OF_MEMORY once at 4G")
    assert TOKEN not in notice.text
    outsider = plugin.admit(spec, SubmitContext(principal="bob"))
    assert outsider is not None and outsider.notices == []


def test_admission_never_fails_a_submission(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    assert plugin.store is not None
    plugin.store.conn.execute("DROP TABLE memory_runs")  # a broken store: logged, no notices, no error
    spec = validate_spec({"command": ["true"]})
    assert plugin.admit(spec, SubmitContext(principal="alice")) is None


def test_notices_say_what_matched_and_are_said_once_per_session_and_template(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    assert plugin.store is not None
    first = validate_spec({"command": ["python3", "-u", "./fit.py", "--seed", "1"], "resources": {"memory": "1G"}})
    ctx = plugin._context(first.model_dump(mode="json", exclude_none=True), None, None, "/work/job")
    sig = classify("", "OUT_OF_MEMORY")
    plugin.store.record_run(1, "alice", ctx, "OUT_OF_MEMORY", sig, {})
    plugin.store.record_failure(1, "alice", ctx, sig)
    # another spelling of the same command, in a fresh session: told, and told what matched
    other = validate_spec({"command": ["/opt/venv/bin/python", "/work/job/fit.py", "--seed", "9"]})
    admission = plugin.admit(other, SubmitContext(principal="alice", session="s2", cwd="/work/job"))
    assert admission is not None
    [notice] = admission.notices
    assert notice.data["matched_by"] == "template" and "quiet" not in notice.data
    assert "[matched: the same command template `python fit.py --seed <v>`]" in notice.text
    # the same session and template again: still in the JSON, but quiet (no warning printed again)
    again = plugin.admit(other, SubmitContext(principal="alice", session="s2", cwd="/work/job"))
    assert again is not None and [n.data.get("quiet") for n in again.notices] == [True]
    # another session hears it once more
    third = plugin.admit(other, SubmitContext(principal="alice", session="s3", cwd="/work/job"))
    assert third is not None and [n.data.get("quiet") for n in third.notices] == [None]
