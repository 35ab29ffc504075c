"""How to resume a campaign: the harness's own resume command, its prompt, and where it runs.

Pure: a `Campaign` and the settings in, a `ResumePlan` out. The prompt puts the reports that arrived
while the harness was away first, then the one-paragraph summary; the command is the harness's own
(`claude --resume ID`, `codex resume ID`, or their headless forms), run in the campaign's directory or
the one given (a copy of the tree on another node). `frontdesk sessions resume` executes it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from frontdesk.agents.campaign import Campaign
from frontdesk.agents.campaign_summary import render_summary
from frontdesk.agents.framing import PendingReport, frame_wake
from frontdesk.agents.harnesses.base import arg_safe
from frontdesk.agents.model import AgentSettings, Harness
from frontdesk.errors import UserError

__all__ = ["ResumePlan", "build_plan", "claude_project_dir", "CONTINUE_LINE"]

CONTINUE_LINE = "[frontdesk] The session was resumed by `frontdesk sessions resume`: carry on with the campaign."


@dataclass(frozen=True)
class ResumePlan:
    """What `frontdesk sessions resume` runs: argv in cwd, with the reports it hands over."""

    session: str
    harness: Harness
    argv: tuple[str, ...]
    cwd: str
    prompt: str
    summary: str
    report_jobs: tuple[int, ...]
    upto_seq: int | None
    """The ack cursor that marks the handed-over reports delivered (None: there were none)."""
    transcript_path: str | None
    continues_turn: bool
    handle: str = ""
    """What the harness's own resume takes (Claude Code's session id, Codex's thread id)."""
    user: str = ""
    """Whose session it is: only they resume it (their harness, their tree, the files their hooks named)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the resume route's answer, `frontdesk sessions resume --json`)."""
        return {
            "session": self.session,
            "harness": str(self.harness),
            "argv": list(self.argv),
            "command": shlex.join(self.argv),
            "cwd": self.cwd,
            "prompt": self.prompt,
            "summary": self.summary,
            "report_jobs": list(self.report_jobs),
            "upto_seq": self.upto_seq,
            "transcript_path": self.transcript_path,
            "continues_turn": self.continues_turn,
            "resume_handle": self.handle or self.session,
            "user": self.user,
        }


def _argv(c: Campaign, cfg: AgentSettings, prompt: str, headless: bool, extra: Sequence[str]) -> list[str]:
    handle = c.resume_handle or c.session
    if not arg_safe(handle):  # `--resume --dangerously-skip-permissions` would be an option, not an id
        raise UserError(f"session {c.session[:80]!r}: its id {handle[:80]!r} cannot be passed to the harness")
    if c.harness is Harness.CLAUDE_CODE:
        if headless:
            return [cfg.claude_bin, "-p", prompt, "--resume", handle, "--output-format", "json", *extra]
        return [cfg.claude_bin, "--resume", handle, *extra, prompt]
    if c.harness is Harness.CODEX:
        if headless:
            return [cfg.codex_bin, "exec", "--skip-git-repo-check", *extra, "resume", handle, prompt]
        return [cfg.codex_bin, "resume", *extra, handle, prompt]
    raise UserError(f"session {c.session}: cannot resume a {c.harness} session (claude-code and codex can)")


def build_plan(
    c: Campaign,
    reports: Sequence[PendingReport],
    cfg: AgentSettings,
    *,
    directory: str | None = None,
    headless: bool = False,
    harness_args: Sequence[str] = (),
) -> ResumePlan:
    """The resume of campaign `c`: reports first, then the summary, as the harness's resume prompt."""
    cwd = directory or c.cwd
    if not cwd:
        raise UserError(f"session {c.session}: its directory is unknown; pass --dir PATH")
    summary = render_summary(c)
    parts = [frame_wake(reports)] if reports else []
    prompt = "\n\n".join([*parts, summary, CONTINUE_LINE])
    return ResumePlan(
        session=c.session,
        harness=c.harness,
        argv=tuple(_argv(c, cfg, prompt, headless, harness_args)),
        cwd=cwd,
        prompt=prompt,
        summary=summary,
        report_jobs=tuple(r.job_id for r in reports),
        upto_seq=reports[-1].seq if reports else None,
        transcript_path=c.transcript_path,
        continues_turn=c.turn_unfinished,
        handle=c.resume_handle or c.session,
        user=c.user,
    )


def claude_project_dir(home: str, cwd: str) -> str:
    """Where Claude Code keeps the transcripts of sessions started in `cwd` (~/.claude/projects/<slug>)."""
    return f"{home.rstrip('/')}/.claude/projects/{re.sub(r'[^A-Za-z0-9]', '-', cwd)}"
