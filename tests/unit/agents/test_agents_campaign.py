"""Campaign state (issue 18): checkpoints in a real SQLite database, the summary (golden), the resume plan,
the plan read from transcripts, and the idempotency keys a session's submissions get from its turns."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
from pathlib import Path

import pytest

from frontdesk.agents.campaign import (
    Campaign,
    CampaignJob,
    CampaignReport,
    JobOutcome,
    LessonSeen,
    PlanItem,
    PlanStatus,
)
from frontdesk.agents.campaign_plan import last_plan, plan_from_lines, plan_from_tool
from frontdesk.agents.campaign_resume import build_plan, claude_project_dir
from frontdesk.agents.campaign_service import CampaignService
from frontdesk.agents.campaign_ssh import remote_command, ssh_argv
from frontdesk.agents.campaign_store import CampaignStore, outcome_of
from frontdesk.agents.campaign_summary import render_summary
from frontdesk.agents.framing import PendingReport
from frontdesk.agents.model import AgentSettings, Harness, TurnState
from frontdesk.agents.store import SessionStore
from frontdesk.core.submission import keyed, session_key, spec_digest
from frontdesk.errors import UserError
from frontdesk.plugins import SubmitContext
from frontdesk.spec.model import validate_spec
from frontdesk.store.db import open_db

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "agents"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    assert text + "\n" == path.read_text()


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    return open_db(tmp_path / "state.db")  # every registered schema, the campaigns' migration included


@pytest.fixture
def svc(db: sqlite3.Connection) -> CampaignService:
    return CampaignService(SessionStore(db), CampaignStore(db), AgentSettings(), _Clock())


def _job(
    db: sqlite3.Connection, sid: str, state: str, name: str, key: str | None = None, code: int | None = None
) -> int:
    cur = db.execute(
        "INSERT INTO jobs(name, spec, state, reason, backend, principal, session, idempotency_key, exit_code, "
        "submitted_at) VALUES(?, '{}', ?, ?, 'local', 'alice', ?, ?, ?, 1.0)",
        (name, state, "OutOfMemory" if state == "OUT_OF_MEMORY" else None, sid, key, code),
    )
    return int(cur.lastrowid or 0)


# -- store ----------------------------------------------------------------------------------------------


def test_prompts_count_turns_and_a_resume_of_an_unfinished_turn_keeps_its_number(svc: CampaignService) -> None:
    s, _ = svc.sessions.upsert("alice", "s1", 1.0, "claude-code", "/p", {"host": "login1"})
    svc.on_hook(s, "SessionStart", None, None)
    assert svc.load(s).turn == 0 and svc.load(s).resume_handle == "s1" and svc.load(s).host == "login1"
    svc.on_hook(s, "UserPromptSubmit", None, None)
    svc.on_hook(s, "UserPromptSubmit", None, None)
    assert svc.load(s).turn == 2
    svc.sessions.set_turn(("alice", "s1"), TurnState.IN_TURN, 5.0)  # killed in the middle of turn 2
    s = svc.sessions.get("alice", "s1")
    assert s is not None
    plan = svc.resume(s, directory="/copy", headless=True, harness_args=(), commit=True)
    assert plan.continues_turn and plan.cwd == "/copy"
    s = svc.sessions.get("alice", "s1")
    assert s is not None
    svc.on_hook(s, "UserPromptSubmit", None, None)  # the resume's prompt continues turn 2
    c = svc.load(s)
    assert (c.turn, c.incarnation, c.cwd) == (2, 1, "/copy")
    svc.on_hook(s, "UserPromptSubmit", None, None)
    assert svc.load(s).turn == 3


def _prompt(svc: CampaignService, sid: str) -> None:
    """A UserPromptSubmit as the hook route runs it: the campaign's checkpoint, then the turn state."""
    svc.on_hook(svc.sessions.owned("alice", sid), "UserPromptSubmit", None, None)
    svc.sessions.set_turn(("alice", sid), TurnState.IN_TURN, 2.0)


def test_turn_of_counts_identical_submissions_per_turn_and_restarts_with_each_resume(svc: CampaignService) -> None:
    svc.sessions.upsert("alice", "s2", 1.0, "codex", "/p")
    _prompt(svc, "s2")
    assert svc.turn_of("s2", "alice", "h1") == (1, 0)
    assert svc.turn_of("s2", "alice", "h1") == (1, 1)  # the same job twice in one turn: two jobs
    assert svc.turn_of("s2", "alice", "h2") == (1, 0)
    assert svc.turn_of("s2", "bob", "h1") == (1, 0)  # bob's own s2: counted apart from alice's
    assert svc.turn_of("s2", "bob", "h1") == (1, 1) and svc.sessions.owned("bob", "s2").user == "bob"
    svc.sessions.set_turn(("alice", "s2"), TurnState.IN_TURN, 2.0)
    svc.resume(svc.sessions.owned("alice", "s2"), directory=None, headless=False, harness_args=(), commit=True)
    _prompt(svc, "s2")  # the resume's prompt continues turn 1
    assert svc.turn_of("s2", "alice", "h1") == (1, 0)  # the replayed turn: the same numbers again
    assert svc.turn_of("s2", "alice", "h1") == (1, 1)
    _prompt(svc, "s2")
    assert svc.turn_of("s2", "alice", "h1") == (2, 0)


def test_a_submission_after_the_turns_prompt_hook_was_lost_opens_that_turn(svc: CampaignService) -> None:
    s, _ = svc.sessions.upsert("alice", "s4", 1.0, "claude-code", "/p")
    svc.on_hook(s, "UserPromptSubmit", None, None, "p1")
    svc.sessions.set_turn(("alice", "s4"), TurnState.IN_TURN, 2.0)
    assert svc.turn_of("s4", "alice", "h1") == (1, 0)
    svc.sessions.set_turn(
        ("alice", "s4"), TurnState.ENDED, 3.0
    )  # turn 1 ended; turn 2's hooks never reached the gateway
    assert svc.turn_of("s4", "alice", "h1") == (2, 0) and svc.turn_of("s4", "alice", "h1") == (2, 1)
    c = svc.load(svc.sessions.owned("alice", "s4"))
    assert c.turn_inferred and c.turn_unfinished  # killed now, a resume replays turn 2
    svc.on_hook(svc.sessions.owned("alice", "s4"), "Stop", None, None, "p2")  # its Stop names it, ends it
    c = svc.load(svc.sessions.owned("alice", "s4"))
    assert c.turn == 2 and not c.turn_inferred


def test_turn_of_registers_an_unknown_session_for_its_caller(svc: CampaignService) -> None:
    assert svc.turn_of("fresh", "alice", "h") == (1, 0)  # its first submission opens turn 1 (no hooks heard)
    assert svc.sessions.owned("alice", "fresh").user == "alice"


def test_load_reads_jobs_unread_reports_lessons_and_plan(svc: CampaignService, db: sqlite3.Connection) -> None:
    s, _ = svc.sessions.upsert("alice", "s3", 1.0, "claude-code", "/p", {"transcript_path": "/h/t.jsonl"})
    done = _job(db, "s3", "COMPLETED", "prep", "k1", 0)
    oom = _job(db, "s3", "OUT_OF_MEMORY", "train", "k2", 137)
    run = _job(db, "s3", "RUNNING", "eval")
    report = {"classification": {"cause": "killed:  peak 4.1G\n over the 4G limit", "kind": "oom"}}
    db.execute("UPDATE jobs SET report=? WHERE id IN (?, ?)", (json.dumps(report), oom, done))
    _job(db, "other", "RUNNING", "not-mine")
    svc.sessions.add_report(("alice", "s3"), oom, "train", "OUT_OF_MEMORY", "frontdesk job 2: OUT_OF_MEMORY", 2.0)
    db.execute(
        "INSERT INTO events(ts, kind, job_id, session, principal, data) VALUES(1, 'job.warning', ?, 's3', 'alice', ?)",
        (oom, json.dumps({"source": "memory", "text": "memory: OOM at 4G", "lesson_id": 7})),
    )
    svc.on_hook(s, "Stop", [("prep data", "completed"), ("train", "in_progress")], "TodoWrite")
    svc.on_hook(s, "Stop", None, None)  # no plan in this hook: the last one is kept
    c = svc.load(s)
    assert [(j.id, j.outcome) for j in c.jobs] == [
        (done, JobOutcome.COMPLETED),
        (oom, JobOutcome.FAILED),
        (run, JobOutcome.PENDING),
    ]
    assert c.jobs[0].idempotency_key == "k1" and [j.id for j in c.pending] == [run]
    assert (c.jobs[0].cause, c.jobs[1].cause) == (None, "killed: peak 4.1G over the 4G limit")  # failed only
    assert [r.job_id for r in c.unread] == [oom]
    assert c.lessons == (LessonSeen(7, oom, "memory: OOM at 4G"),)
    assert c.plan == (PlanItem("prep data", PlanStatus.COMPLETED), PlanItem("train", PlanStatus.IN_PROGRESS))
    assert c.transcript_path == "/h/t.jsonl" and c.plan_source == "TodoWrite"
    assert json.loads(json.dumps(c.to_dict()))["jobs"][1]["outcome"] == "failed"


def test_campaign_survives_reopening_the_database(tmp_path: Path) -> None:
    db = open_db(tmp_path / "state.db")
    svc = CampaignService(SessionStore(db), CampaignStore(db), AgentSettings(), _Clock())
    s, _ = svc.sessions.upsert("alice", "s4", 1.0, "claude-code", "/p")
    svc.on_hook(s, "UserPromptSubmit", [("a", "pending")], "TodoWrite")
    db.close()
    again = open_db(tmp_path / "state.db")
    c = CampaignStore(again).load(SessionStore(again).owned("alice", "s4"))
    assert (c.turn, c.plan) == (1, (PlanItem("a"),))


def test_outcome_of_every_state() -> None:
    assert outcome_of("COMPLETED") is JobOutcome.COMPLETED
    assert outcome_of("RUNNING") is JobOutcome.PENDING and outcome_of("PENDING") is JobOutcome.PENDING
    for st in ("FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"):
        assert outcome_of(st) is JobOutcome.FAILED


# -- summary and resume plan -------------------------------------------------------------------------------


def _campaign(**kw: object) -> Campaign:
    base: dict[str, object] = dict(
        session="0f3c9e1a-7d2b-4c55-9a61-2b8e4f7d1c03",
        user="alice",
        harness=Harness.CLAUDE_CODE,
        cwd="/scratch/alice/proj",
        host="login2",
        turn_state=TurnState.IN_TURN,
        turn=4,
        incarnation=1,
        resume_handle="0f3c9e1a-7d2b-4c55-9a61-2b8e4f7d1c03",
        transcript_path="/home/alice/.claude/projects/-scratch-alice-proj/0f3c.jsonl",
        pid=4242,
        jobs=(
            CampaignJob(11, "prep", "COMPLETED", JobOutcome.COMPLETED, "k11", exit_code=0),
            CampaignJob(
                12,
                "train",
                "OUT_OF_MEMORY",
                JobOutcome.FAILED,
                "k12",
                "OutOfMemory",
                137,
                "peak 4.1G over the 4G limit",
            ),
            CampaignJob(13, "sweep", "RUNNING", JobOutcome.PENDING, "k13"),
            CampaignJob(14, None, "PENDING", JobOutcome.PENDING, None),
        ),
        unread=(CampaignReport(12, "train", "OUT_OF_MEMORY", "frontdesk job 12: OUT_OF_MEMORY"),),
        lessons=(LessonSeen(7, 12, "memory: OOM"),),
        plan=(
            PlanItem("prepare data", PlanStatus.COMPLETED),
            PlanItem("train the model", PlanStatus.IN_PROGRESS),
            PlanItem("evaluate", PlanStatus.PENDING),
        ),
        plan_source="TodoWrite",
    )
    base.update(kw)
    return Campaign(**base)  # type: ignore[arg-type]


def test_summary_golden() -> None:
    _golden("campaign_summary.txt", render_summary(_campaign()))


def test_summary_of_a_campaign_without_jobs_is_short() -> None:
    text = render_summary(_campaign(jobs=(), unread=(), lessons=(), plan=(), turn_state=TurnState.IDLE, incarnation=0))
    assert text.endswith("turn 4). It has submitted no jobs.")
    assert "\n" not in render_summary(_campaign())  # one paragraph


def test_resume_plan_puts_the_reports_first_then_the_summary() -> None:
    c = _campaign()
    reports = [PendingReport(5, 12, "train", "OUT_OF_MEMORY", "frontdesk job 12 (train): OUT_OF_MEMORY")]
    plan = build_plan(c, reports, AgentSettings(claude_bin="/opt/claude"), headless=True, harness_args=["--x"])
    assert plan.argv[:2] == ("/opt/claude", "-p") and plan.argv[3:5] == ("--resume", c.session)
    assert plan.argv[-1] == "--x" and plan.cwd == c.cwd and plan.upto_seq == 5 and plan.report_jobs == (12,)
    assert plan.prompt.index("OUT_OF_MEMORY") < plan.prompt.index("Campaign summary")
    interactive = build_plan(c, [], AgentSettings(), directory="/copy")
    assert interactive.argv == ("claude", "--resume", c.session, interactive.prompt) and interactive.cwd == "/copy"
    codex = build_plan(_campaign(harness=Harness.CODEX, resume_handle="th-1"), [], AgentSettings(), headless=True)
    assert codex.argv[:5] == ("codex", "exec", "--skip-git-repo-check", "resume", "th-1")
    with pytest.raises(UserError, match="cannot resume a gemini"):
        build_plan(_campaign(harness=Harness.GEMINI), [], AgentSettings())
    with pytest.raises(UserError, match="--dir"):
        build_plan(_campaign(cwd=None), [], AgentSettings())


def test_ssh_argv_quotes_the_remote_resume_and_claude_project_dir() -> None:
    cmd = remote_command("s 1", "/scratch/my proj", True, ["--allowedTools", "Bash Read"], False)
    assert shlex.split(cmd) == [
        "exec", "frontdesk", "sessions", "resume", "s 1", "--dir", "/scratch/my proj",
        "--headless", "--harness-args", "--allowedTools 'Bash Read'",
    ]  # fmt: skip
    via = remote_command("t", "/p", True, [], True, "app-server")
    assert via == "exec frontdesk sessions resume t --dir /p --headless --json --via app-server"
    argv = ssh_argv("me@login3", cmd, tty=False, env={"FRONTDESK_SSH": "ssh -F '/etc/my ssh'"})
    assert argv == [
        "ssh",
        "-F",
        "/etc/my ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=15",
        "-T",
        "me@login3",
        cmd,
    ]
    assert ssh_argv("login3", "x", tty=True, env={})[:6] == [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=15",
        "-t",
    ]
    for bad in ("-oProxyCommand=x", "a b", "h;rm", "", "a@"):
        with pytest.raises(UserError, match="not a host name"):
            ssh_argv(bad, "x", tty=False, env={})
    assert claude_project_dir("/home/a/", "/scratch/my proj.x") == "/home/a/.claude/projects/-scratch-my-proj-x"


# -- plans read from transcripts ---------------------------------------------------------------------------


def test_plan_from_claude_todowrite_and_codex_update_plan(tmp_path: Path) -> None:
    todo = {"name": "TodoWrite", "type": "tool_use", "input": {"todos": [{"content": "a", "status": "completed"}]}}
    later = {"name": "TodoWrite", "type": "tool_use", "input": {"todos": [{"content": "b", "status": "in_progress"}]}}
    lines = [
        json.dumps({"type": "assistant", "message": {"content": [todo]}}),
        "{torn",
        json.dumps({"message": {"content": [later]}}),
    ]
    assert plan_from_lines(lines) == ([{"text": "b", "status": "in_progress"}], "TodoWrite")
    args = json.dumps({"plan": [{"step": "s1", "status": "completed"}, {"step": "s2", "status": "pending"}]})
    codex = json.dumps(
        {"type": "response_item", "payload": {"type": "function_call", "name": "update_plan", "arguments": args}}
    )
    path = tmp_path / "rollout.jsonl"
    path.write_text(lines[0] + "\n" + codex + "\n")
    assert last_plan(str(path)) == (
        [{"text": "s1", "status": "completed"}, {"text": "s2", "status": "pending"}],
        "update_plan",
    )
    assert last_plan(str(tmp_path / "missing")) is None and last_plan(None) is None
    assert plan_from_lines(['{"message": {"content": "TodoWrite"}}']) is None


# -- keys -------------------------------------------------------------------------------------------------


class _Plugins:
    """The agents plug-in's turn tracking over a real store (the piece keyed() asks)."""

    name = "agents"

    def __init__(self, svc: CampaignService) -> None:
        self.svc = svc

    def turn_of(self, session: str, principal: str, spec_hash: str) -> tuple[int, int] | None:
        return self.svc.turn_of(session, principal, spec_hash)


def test_keyed_derives_keys_from_session_turn_and_spec(svc: CampaignService) -> None:
    plugins = [_Plugins(svc)]
    spec = validate_spec({"command": ["sh", "-c", "echo 1"], "name": "a"})
    ctx = SubmitContext(principal="alice", session="s5")
    svc.sessions.upsert("alice", "s5", 1.0, "claude-code", "/p")
    _prompt(svc, "s5")
    first, second = keyed(spec, ctx, plugins), keyed(spec, ctx, plugins)
    assert first.idempotency_key == session_key("s5", 1, 0, spec_digest(spec)) != second.idempotency_key
    other = keyed(validate_spec({"command": ["sh", "-c", "echo 2"], "name": "a"}), ctx, plugins)
    assert other.idempotency_key is not None and other.idempotency_key.endswith(":0")
    _prompt(svc, "s5")
    assert keyed(spec, ctx, plugins).idempotency_key == session_key("s5", 2, 0, spec_digest(spec))  # a new turn
    explicit = validate_spec({"command": ["true"], "idempotency_key": "mine"})
    assert keyed(explicit, ctx, plugins).idempotency_key == "mine"
    assert keyed(spec, SubmitContext(principal="alice"), plugins).idempotency_key is None  # not from a session
    assert keyed(spec, ctx, []).idempotency_key is None  # no plug-in tracks turns


def test_spec_digest_ignores_key_and_session_and_long_sessions_are_hashed() -> None:
    a = validate_spec({"command": ["x"], "session": "s", "idempotency_key": "k"})
    assert (
        spec_digest(a)
        == spec_digest(validate_spec({"command": ["x"]}))
        != spec_digest(validate_spec({"command": ["y"]}))
    )
    key = session_key("z" * 200, 3, 1, "d" * 16)
    assert len(key) <= 200 and key.endswith(":turn3:" + "d" * 16 + ":1")


def test_plan_from_a_post_tool_use_payload() -> None:
    payload = {"tool_name": "TodoWrite", "tool_input": {"todos": [{"content": "x", "status": "completed"}, "junk"]}}
    assert plan_from_tool(payload) == ([{"text": "x", "status": "completed"}], "TodoWrite")
    assert plan_from_tool({"tool_name": "Bash", "tool_input": {"todos": []}}) is None
    assert plan_from_tool({"tool_name": "TodoWrite", "tool_input": {"todos": "nope"}}) is None


def test_show_text_golden() -> None:
    from frontdesk.cli.campaigns import _show_text

    c = _campaign()
    _golden("campaign_show.txt", _show_text({**c.to_dict(), "summary": render_summary(c)}))


def test_a_thread_started_by_an_app_server_client_is_told_by_its_rollout(tmp_path: Path) -> None:
    from frontdesk.agents.codex_appserver import started_by_app_server

    def rollout(name: str, first: object) -> str:
        path = tmp_path / name
        path.write_text(json.dumps(first) + "\n" + json.dumps({"type": "response_item"}) + "\n")
        return str(path)

    meta = {"type": "session_meta", "payload": {"id": "t", "originator": "an-ide", "source": "vscode"}}
    assert started_by_app_server(rollout("ide.jsonl", meta))
    meta["payload"]["source"] = "exec"  # type: ignore[index]
    assert not started_by_app_server(rollout("exec.jsonl", meta))
    assert not started_by_app_server(rollout("other.jsonl", {"type": "response_item", "payload": {"source": "x"}}))
    (tmp_path / "torn.jsonl").write_text('{"type": "session_me')
    for path in (str(tmp_path / "torn.jsonl"), str(tmp_path / "missing.jsonl"), None, ""):
        assert not started_by_app_server(path)


def test_app_server_harness_args_split_the_sandbox_from_the_server_flags() -> None:
    from frontdesk.cli.campaigns import _server_args

    assert _server_args(["-c", "x=1", "--sandbox", "danger-full-access", "--enable", "f"]) == (
        "danger-full-access",
        ["-c", "x=1", "--enable", "f"],
    )
    assert _server_args(["--sandbox=read-only"]) == ("read-only", [])
    assert _server_args([]) == (None, [])
