"""The guard on the gateway's submission path: check each job's command or script before it is stored.

deny → `Denied` (nothing stored); ask → a `Notice(source="guard")` and the job still runs, unless
`[guard] ask_blocks_jobs = true`. Every ask and deny is a `guard.verdict` event with the principal.
Secrets in the spec's command, script or env → ask, with the secret masked.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from frontdesk.errors import Denied
from frontdesk.events.models import Event, EventKind
from frontdesk.guard.checker import check
from frontdesk.guard.context import context_from_settings, guard_section, process_info, read_text_file
from frontdesk.guard.model import Decision, NodeRole, Verdict
from frontdesk.guard.secrets import find_secrets, redact
from frontdesk.guard.taint import TaintStore, store_home
from frontdesk.plugins import Admission, GatewayHandle, Notice, SubmitContext

if TYPE_CHECKING:
    from fastapi import APIRouter

    from frontdesk.config import Settings
    from frontdesk.plugins import Admits, Attaches, Routes
    from frontdesk.spec.model import JobSpec

__all__ = ["GuardPlugin", "job_text", "job_texts"]

_VERDICT_FIELDS = ("rule", "reason", "alternative", "command", "cwd", "source", "harness", "taint_source")


def job_text(spec: Any) -> str:
    """The shell text a job runs: its script, or its argv joined with shell quoting."""
    if getattr(spec, "script", None):
        return str(spec.script)
    argv = list(spec.argv()) if hasattr(spec, "argv") else list(spec.command or [])
    return _joined(argv)


def _joined(argv: list[str]) -> str:
    if len(argv) == 1:
        return str(argv[0])  # one string: a command line
    return shlex.join(argv)


MAX_SWEEP_CHECKS = 256
"""Distinct task texts of one sweep the guard reads (~0.1-0.25 s of the gateway's CPU at most); past it, an ask."""


def job_texts(spec: Any) -> tuple[list[str], int]:
    """What a job runs, as the guard reads it, and how many distinct texts there are in all.

    One text, or for a sweep its tasks' own texts: `{name}` filled in as the tasks will be (an unfilled
    template is neither what runs nor always valid shell; a task's danger may come from one value or from two
    together). First every point that brings a value not seen yet (so each value of each parameter is read
    early), then the other points, at most `MAX_SWEEP_CHECKS`.
    """
    if getattr(spec, "sweep", None) is None:
        return [job_text(spec)], 1
    from frontdesk.spec.arrays import render_argv, render_script, sweep_points

    script = str(spec.script) if getattr(spec, "script", None) else None
    argv = list(spec.argv())
    points = sweep_points(spec.sweep)
    seen: set[tuple[str, str]] = set()
    first: list[int] = []
    for i, point in enumerate(points):
        new = {(name, repr(value)) for name, value in point.items()} - seen
        if new:
            seen |= new
            first.append(i)
    chosen = set(first)
    order = first + [i for i in range(len(points)) if i not in chosen]
    texts: dict[str, None] = {}
    for i in order:
        point = points[i]
        texts[render_script(script, point) if script is not None else _joined(render_argv(argv, point))] = None
    distinct = list(texts)
    return distinct[:MAX_SWEEP_CHECKS], len(distinct)


MAX_GUARD_LINES = 1_000
MAX_GUARD_CHARS = 128 * 1024
"""What the guard reads of one submission (all its texts together) on the gateway's loop: ~0.3-0.45 ms a line,
so a 1 MiB script of short lines would hold every other caller for a minute. Past it, an ask (`guard.unchecked`),
which `[guard] ask_blocks_jobs = true` turns into a refusal."""


def _within(text: str, lines: int, chars: int) -> str | None:
    """`text` cut to whole lines, at most `lines` of them and `chars` characters; None if it fits."""
    if text.count("\n") < lines and len(text) <= chars:
        return None
    head = text[: max(chars, 0)].split("\n")
    head = head[: max(lines, 0)] if len(head) > lines else head[:-1]  # a line the character cap cut is dropped
    return "\n".join(head)


def _strongest(texts: list[str], total: int, gctx: Any) -> tuple[str, Verdict]:
    """The first of the strongest verdicts over `texts` (stops at a deny); an ask if some texts went unread.

    At most `MAX_GUARD_LINES` / `MAX_GUARD_CHARS` of them in all are read: a text past the budget is read up to it
    (a deny there stands) and the verdict is at least the ask `guard.unchecked`."""
    best: tuple[str, Verdict] | None = None
    lines = chars = 0
    for n, text in enumerate(texts):
        cut = _within(text, MAX_GUARD_LINES - lines, MAX_GUARD_CHARS - chars)
        read = text if cut is None else cut
        lines, chars = lines + read.count("\n") + 1, chars + len(read)
        verdict = check(read, gctx) if read.strip() else Verdict(Decision.ALLOW)
        if best is None or verdict.decision.rank > best[1].decision.rank:
            best = (text, verdict)
            if verdict.decision is Decision.DENY:
                return best
        if cut is not None:
            if best[1].decision is not Decision.ALLOW:
                return best
            return text, Verdict(
                Decision.ASK,
                "guard.unchecked",
                f"the guard reads at most {MAX_GUARD_LINES:,} lines ({MAX_GUARD_CHARS // 1024} KiB) of a job's"
                f" commands on the gateway; past that this job's {'commands' if n else 'script'} run unread",
                "keep the job script short and put the work in a file it runs (the guard reads files a script names)",
            )
    assert best is not None
    if total > len(texts) and best[1].decision is Decision.ALLOW:
        unread = Verdict(
            Decision.ASK,
            "sweep.unchecked",
            f"the guard read {len(texts)} of this sweep's {total} distinct task commands (each value at least once"
            " where it could); the rest run unread",
            "split the sweep, or pass the values through the environment (FD_SWEEP_*) instead of the command",
        )
        return texts[0], unread
    return best


class GuardPlugin:
    """Checks submissions with the guard's rules; publishes verdicts to the journal."""

    name = "guard"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        section = guard_section(settings)
        self.ask_blocks_jobs = bool(section.get("ask_blocks_jobs", False))
        self.enabled = bool(section.get("enabled", True))
        self.gateway: GatewayHandle | None = None
        context_from_settings(settings, with_taint=False)  # validate [guard] at start, not per job

    def attach(self, gateway: GatewayHandle) -> None:
        """Keep the gateway to publish verdicts through."""
        self.gateway = gateway

    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission | None:
        """Check one submission; raise Denied, return a guard notice, or None when all is well."""
        if not self.enabled:
            return None
        env = {**ctx.env, **dict(spec.env or {})}
        if ctx.uid is not None:  # the job starts from its user's login defaults (HOME...), its environment over them
            env = {"HOME": _home_of(ctx.uid, env), **env}
        gctx = context_from_settings(self.settings, cwd=spec.workdir or ctx.cwd or "/", with_taint=False)
        taint = TaintStore.open(store_home(self.settings.home, ctx.principal))  # the submitter's jobs' output only
        gctx.tainted, gctx.taint_text = taint.source_of, taint.text_source
        # A job runs on a compute node (or the executor) with an environment we only partly know.
        gctx = replace(gctx, node_role=NodeRole.COMPUTE, env=env, env_complete=False)
        if ctx.uid is not None:  # scripts, pids and `~` as the submitter has them (a root gateway sees anything)
            gctx = replace(gctx, read_file=partial(read_text_file, uid=ctx.uid), home=env["HOME"])
            gctx.process_info = partial(process_info, my_uid=ctx.uid)
        text, verdict = _strongest(*job_texts(spec), gctx)
        if verdict.decision is Decision.ALLOW:
            verdict = self._env_secrets(spec) or verdict
        if verdict.decision is Decision.ALLOW:
            return None
        self._publish(verdict, text, spec, ctx)
        message = f"guard [{verdict.rule}]: {verdict.reason}"
        data = {"rule": verdict.rule, "verdict": str(verdict.decision), "alternative": verdict.alternative}
        if verdict.decision is Decision.DENY or self.ask_blocks_jobs:
            raise Denied(message, rule=verdict.rule, alternative=verdict.alternative)
        text_out = message + (f" (instead: {verdict.alternative})" if verdict.alternative else "")
        return Admission(notices=[Notice(source="guard", text=text_out, data=data)])

    def router(self) -> APIRouter:
        """`POST /v1/guard/verdicts`: the hook and `guard check` journal their asks and denies."""
        from frontdesk.guard.api import verdicts_router

        return verdicts_router(self)

    def record_verdict(self, body: dict[str, Any], principal: str | None) -> int:
        """Journal an ask or deny reported by a hook; returns the event's sequence number."""
        from frontdesk.errors import UserError

        verdict = str(body.get("verdict"))
        if verdict not in ("ask", "deny"):
            raise UserError("verdict must be ask or deny", field="verdict")
        if self.gateway is None:
            raise UserError("the guard is not attached to a gateway")
        data: dict[str, Any] = {k: redact(str(body[k]))[:500] for k in _VERDICT_FIELDS if body.get(k) is not None}
        data["verdict"] = verdict
        data.setdefault("source", "hook")
        session = str(body["session"]) if body.get("session") else None
        event = self.gateway.publish(Event(EventKind.GUARD_VERDICT, data=data, session=session, principal=principal))
        return int(event.seq)

    def _env_secrets(self, spec: Any) -> Verdict | None:
        found = []
        for key, value in (spec.env or {}).items():
            line = f"{key}={value}"
            found += [f"{key}=«redacted:{s.kind}:{s.fingerprint}»" for s in find_secrets(line)]
        if not found:
            return None
        return Verdict(
            Decision.ASK,
            "secret.in-command",
            "the job's environment carries a secret that would be stored with the job: " + ", ".join(found),
            "pass a path to a file readable only by you, or use the site's secret store",
        )

    def _publish(self, verdict: Verdict, text: str, spec: Any, ctx: SubmitContext) -> None:
        if self.gateway is None:
            return
        data = {
            **verdict.to_dict(),
            "command": redact(text[:4000])[:500],
            "source": ctx.source,
            "harness": ctx.harness,
            "name": getattr(spec, "name", None),
        }
        self.gateway.publish(
            Event(
                EventKind.GUARD_VERDICT,
                data=data,
                session=getattr(spec, "session", None) or ctx.session,
                principal=ctx.principal,
            )
        )


if TYPE_CHECKING:  # mypy checks that the plug-in fits each hook of the gateway's seam (frontdesk.plugins)

    def _fits(p: GuardPlugin) -> tuple[Attaches, Admits, Routes]:
        return p, p, p


def _home_of(uid: int, env: dict[str, str]) -> str:
    """The submitter's `~`: HOME as their job will have it (their environment), else their account's home."""
    import pwd

    if env.get("HOME"):
        return env["HOME"]
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return "/nonexistent"
