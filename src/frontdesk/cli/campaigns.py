"""`frontdesk sessions show|resume|suspend|drain|list`: agent campaigns across restarts and nodes (issue 18).

Registered by cli/agents.py under `sessions`; stdlib + client at import. The gateway keeps the campaign
and builds the resume plan; this side runs it (exec of the harness in the campaign's directory), runs it
on another node (`--on HOST`: the same command over ssh), or submits it as a job (`--slurm`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from typing import Any

from frontdesk.cli.parsing import client as _client

__all__ = ["register_campaigns"]


def register_campaigns(sp: Any) -> None:
    """Add the campaign subcommands to the `sessions` subparsers."""
    p = sp.add_parser("show", help="a session's campaign: jobs, unread reports, plan, resume handle, summary")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--user", metavar="NAME", help="another user's session of that id (root and admins only)")
    p.set_defaults(func=cmd_show)

    p = sp.add_parser("resume", help="relaunch the harness's own resume with the reports and a summary first")
    p.add_argument("id")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--on", metavar="HOST", help="resume it on HOST over ssh (BatchMode)")
    where.add_argument("--slurm", action="store_true", help="submit the headless resume as a frontdesk job")
    p.add_argument("--dir", help="the directory to resume in (default: the campaign's)")
    p.add_argument("--headless", action="store_true", help="one headless turn (claude -p, codex exec)")
    p.add_argument(
        "--via",
        choices=["exec", "app-server"],
        help="Codex: resume through `codex exec` or the app server (default: the one that started the thread)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the command and prompt; run and record nothing")
    p.add_argument("--json", action="store_true")
    p.add_argument("--harness-args", default="", metavar="'ARGS'", help="extra arguments for the harness (one string)")
    p.add_argument("--user", metavar="NAME", help="another user's session of that id (root and admins only)")
    p.set_defaults(func=cmd_resume)

    p = sp.add_parser("suspend", help="end the session's harness cleanly (SIGTERM); its jobs keep running")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--user", metavar="NAME", help="another user's session of that id (root and admins only)")
    p.set_defaults(func=cmd_suspend)

    p = sp.add_parser("drain", help="suspend every session on a node and print how to resume each")
    p.add_argument("--node", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_drain)

    p = sp.add_parser("list", help="sessions, optionally those on one node (--all: every user's, root and admins only)")
    p.add_argument("--node")
    p.add_argument("--all", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)


def _sid(raw: str) -> str:
    from urllib.parse import quote

    return quote(raw, safe="")


def _of(args: argparse.Namespace) -> str:
    """`?user=NAME` for --user (the gateway refuses it to a caller who is neither root nor an admin)."""
    return f"?user={_sid(args.user)}" if getattr(args, "user", None) else ""


def cmd_show(args: argparse.Namespace) -> int:
    """The campaign as the gateway keeps it."""
    from frontdesk.cli.output import emit

    c = _client().request("GET", f"/v1/sessions/{_sid(args.id)}/campaign{_of(args)}")
    emit(args.json, c, lambda: _show_text(c))
    return 0


def _show_text(c: dict[str, Any]) -> str:
    import textwrap

    lines = [textwrap.fill(c["summary"], 100, break_on_hyphens=False), ""]
    lines.append(f"resume handle: {c.get('resume_handle') or '-'}   transcript: {c.get('transcript_path') or '-'}")
    for j in c["jobs"]:
        lines.append(
            f"  job {j['id']:<6} {j['state']:<14} {j.get('name') or '-':<20} key {j.get('idempotency_key') or '-'}"
        )
    for p in c["plan"]:
        lines.append(f"  [{p['status']}] {p['text']}")
    return "\n".join(lines)


def _harness_args(args: argparse.Namespace) -> list[str]:
    from frontdesk.errors import UserError

    try:
        return shlex.split(args.harness_args or "")
    except ValueError as exc:
        raise UserError(f"--harness-args: {exc}") from None


def cmd_resume(args: argparse.Namespace) -> int:
    """Resume here (exec), print the ssh command (--on), or submit a headless resume job (--slurm)."""
    from frontdesk.cli.output import emit

    client = _client()
    extra = _harness_args(args)
    path = f"/v1/sessions/{_sid(args.id)}/campaign/resume{_of(args)}"
    directory = os.path.abspath(args.dir) if args.dir else None
    body = {"dir": directory, "headless": bool(args.headless or args.slurm), "harness_args": extra}
    plan = client.request("POST", path, {**body, "commit": False})
    _refuse_anothers(plan, args)
    if args.on:
        return _resume_over_ssh(args, plan, extra)
    if args.slurm:
        return _submit_resume(args, client, plan, extra)
    if _via_app_server(args, plan):
        return _app_server_turn(args, client, path, body, plan, extra)
    if args.dry_run:
        text = f"cd {shlex.quote(plan['cwd'])} && {plan['command']}"
        emit(args.json, {"mode": "here", "dry_run": True, **plan}, text)
        return 0
    return _exec_here(args, client, path, body, plan)


def _refuse_anothers(plan: dict[str, Any], args: argparse.Namespace) -> None:
    """Another user's session (root may read any) is theirs to resume: their harness reads its settings and hooks
    from their tree and opens the transcript path their hook reported, which must never happen as root."""
    import pwd

    from frontdesk.errors import Forbidden

    owner, me = plan.get("user") or "", pwd.getpwuid(os.geteuid()).pw_name
    if owner and owner != me and not args.dry_run:
        raise Forbidden(f"session {args.id} is {owner}'s: resume it as {owner} (runuser -u {owner} -- frontdesk ...)")


def _resume_over_ssh(args: argparse.Namespace, plan: dict[str, Any], extra: list[str]) -> int:
    """The same resume on HOST (ssh, BatchMode): its output and exit status are this command's."""
    from frontdesk.agents.campaign_ssh import remote_command, run_over_ssh, ssh_argv
    from frontdesk.cli.output import emit

    command = remote_command(args.id, plan["cwd"], bool(args.headless), extra, bool(args.json), args.via)
    argv = ssh_argv(args.on, command, tty=not args.headless and sys.stdin.isatty())
    if args.dry_run:
        emit(args.json, {"mode": "ssh", "dry_run": True, "host": args.on, "argv": argv, "plan": plan}, shlex.join(argv))
        return 0
    sys.stderr.write(f"frontdesk: resuming {args.id} on {args.on}\n")
    sys.stderr.flush()
    return run_over_ssh(argv, args.on)


def _via_app_server(args: argparse.Namespace, plan: dict[str, Any]) -> bool:
    """Codex through its app server: when asked, or (headless) when an app-server client started the thread."""
    from frontdesk.errors import UserError

    if plan["harness"] != "codex":
        if args.via == "app-server":
            raise UserError(f"--via app-server: session {args.id} is a {plan['harness']} session, not codex")
        return False
    if args.via is not None:
        return bool(args.via == "app-server")
    import pwd

    from frontdesk.agents.codex_appserver import started_by_app_server

    if plan.get("user") and plan["user"] != pwd.getpwuid(os.geteuid()).pw_name:
        return False  # another user's transcript path is never opened here (a dry run of root's)
    return bool(args.headless) and started_by_app_server(plan.get("transcript_path"))


def _server_args(extra: list[str]) -> tuple[str | None, list[str]]:
    """`--sandbox MODE` / `-s MODE` becomes thread/resume's sandbox; the rest go to `codex app-server`."""
    sandbox, rest, it = None, [], iter(extra)
    for word in it:
        if word in ("--sandbox", "-s"):
            sandbox = next(it, None)
        elif word.startswith("--sandbox="):
            sandbox = word.split("=", 1)[1]
        else:
            rest.append(word)
    return sandbox, rest


def _app_server_turn(
    args: argparse.Namespace, client: Any, path: str, body: dict[str, Any], plan: dict[str, Any], extra: list[str]
) -> int:
    """One turn on the thread through `codex app-server`: thread/resume, turn/start with the handover prompt."""
    import shutil

    from frontdesk.agents.codex_appserver import resume_turn
    from frontdesk.cli.output import emit
    from frontdesk.errors import UserError

    sandbox, server_args = _server_args(extra)
    codex = plan["argv"][0]
    if args.dry_run:
        what = f"{shlex.join([codex, 'app-server', *server_args])}: thread/resume {plan['resume_handle']}, turn/start"
        emit(args.json, {"mode": "app-server", "dry_run": True, "sandbox": sandbox, **plan}, what)
        return 0
    _refuse_if_running(client, args.id)
    if not os.path.isdir(plan["cwd"]):
        raise UserError(f"{plan['cwd']}: no such directory (pass --dir PATH: the tree on this node)")
    exe = shutil.which(codex)
    if exe is None:
        raise UserError(f"{codex}: not found on PATH ([agents] codex_bin)")
    plan = client.request("POST", path, {**body, "commit": True})
    sys.stderr.write(f"frontdesk: resuming {args.id} through codex app-server\n")
    sys.stderr.flush()
    return resume_turn(
        exe, plan["resume_handle"], plan["cwd"], plan["prompt"], sandbox=sandbox, server_args=server_args
    )


def _refuse_if_running(client: Any, sid: str) -> None:
    """Two harnesses on one session would both act for it: a live one here must be suspended first."""
    from frontdesk.errors import Conflict

    reach = client.request("GET", f"/v1/sessions/{_sid(sid)}").get("reach") or {}
    pid, start, host = reach.get("pid"), reach.get("pid_start"), reach.get("host")
    if isinstance(pid, int) and isinstance(start, int) and host in (None, os.uname().nodename) and _alive(pid, start):
        raise Conflict(f"session {sid} still runs here (pid {pid}): `frontdesk sessions suspend {sid}` first")


def _submit_resume(args: argparse.Namespace, client: Any, plan: dict[str, Any], extra: list[str]) -> int:
    from frontdesk.cli.output import emit

    argv = ["frontdesk", "sessions", "resume", args.id, "--dir", plan["cwd"], "--headless"]
    argv += ["--harness-args", shlex.join(extra)] if extra else []
    argv += ["--via", args.via] if args.via else []
    spec = {"command": argv, "workdir": plan["cwd"], "name": f"resume-{args.id[:8]}", "type": "agent"}
    if args.dry_run:
        emit(args.json, {"mode": "job", "dry_run": True, "spec": spec}, shlex.join(argv))
        return 0
    from frontdesk.agents.detect import detect_context

    job = client.submit(spec=spec, context={**detect_context(), "source": "sessions-resume"})
    emit(args.json, {"mode": "job", "job": job}, f"resume submitted as job {job['id']}")
    return 0


def _relocate_transcript(plan: dict[str, Any], handle: str) -> str | None:
    """Claude Code finds a session's transcript under the directory it runs in: copy it there when moved."""
    import shutil

    from frontdesk.agents.campaign_resume import claude_project_dir

    src = plan.get("transcript_path")
    if plan["harness"] != "claude-code" or not src or not os.path.isfile(src):  # a regular file: never /dev/zero
        return None
    dest_dir = claude_project_dir(os.environ.get("HOME") or os.path.expanduser("~"), plan["cwd"])
    dest = os.path.join(dest_dir, os.path.basename(src))
    if os.path.abspath(dest) != os.path.abspath(src) and not os.path.exists(dest):
        os.makedirs(dest_dir, exist_ok=True)
        shutil.copy2(src, dest)
        return dest
    return None


def _exec_here(args: argparse.Namespace, client: Any, path: str, body: dict[str, Any], plan: dict[str, Any]) -> int:
    import shutil

    from frontdesk.errors import UserError

    _refuse_if_running(client, args.id)
    if not os.path.isdir(plan["cwd"]):
        raise UserError(f"{plan['cwd']}: no such directory (pass --dir PATH: the tree on this node)")
    exe = shutil.which(plan["argv"][0])
    if exe is None:
        raise UserError(f"{plan['argv'][0]}: not found on PATH ([agents] claude_bin / codex_bin)")
    plan = client.request("POST", path, {**body, "commit": True})  # recorded; the reports are in its prompt
    moved = _relocate_transcript(plan, args.id)
    if moved:
        sys.stderr.write(f"frontdesk: transcript copied to {moved}\n")
    if args.json:
        sys.stderr.write(f"frontdesk: resuming {args.id}: {plan['command'][:200]}\n")
    sys.stderr.flush()
    os.chdir(plan["cwd"])
    os.environ["PWD"] = plan["cwd"]
    os.execv(exe, plan["argv"])
    return 0  # not reached


def _alive(pid: int, start: int) -> bool:
    """The process pid + start time still runs in this boot (a zombie waiting for its parent has ended)."""
    from frontdesk import procid

    return procid.running(procid.ProcId(pid, start, procid.boot_id()))


def _signal(pid: int, start: int) -> bool:
    """SIGTERM that very process (procid.send: a pidfd, so the pid cannot change hands after the checks)."""
    from frontdesk import procid

    return procid.send(procid.ProcId(pid, start, procid.boot_id()), signal.SIGTERM)


def _not_theirs(pid: int, user: str) -> bool:
    """Whether the process is not the session's user's: a session names its own pid, so root signals nothing of
    another's (a daemon, another user's agent) that a session named."""
    import pwd

    try:
        return os.stat(f"/proc/{pid}").st_uid != pwd.getpwnam(user).pw_uid
    except (OSError, KeyError):
        return True


def _suspend_one(client: Any, view: dict[str, Any]) -> dict[str, Any]:
    """SIGTERM the session's harness when it runs here and is the caller's (pid + start time); record it."""
    reach = view.get("reach") or {}
    pid, start, host = reach.get("pid"), reach.get("pid_start"), reach.get("host")
    out: dict[str, Any] = {"session": view["id"], "host": host, "signalled": False}
    if host and host != os.uname().nodename:
        out["reason"] = f"the harness runs on {host}: run this there"
    elif not isinstance(pid, int) or not isinstance(start, int) or not _alive(pid, start):
        out["reason"] = "no harness process of this session runs here"
    elif _not_theirs(pid, str(view.get("user") or "")):
        out["reason"] = f"process {pid} is not {view.get('user')}'s: never signalled"
    elif os.getuid() != 0 and os.stat(f"/proc/{pid}").st_uid != os.getuid():
        out["reason"] = f"process {pid} is not yours"
    elif not _signal(pid, start):
        out["reason"] = "no harness process of this session runs here"
    else:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid, start):
            time.sleep(0.1)
        out.update(signalled=True, pid=pid, exited=not _alive(pid, start))
    owner = f"?user={_sid(str(view['user']))}" if view.get("user") else ""  # root's drain: the session's own user
    client.request("POST", f"/v1/sessions/{_sid(view['id'])}/campaign/suspend{owner}", {})
    out["resume"] = f"frontdesk sessions resume {view['id']}" + (
        f" --dir {shlex.quote(view['cwd'])}" if view.get("cwd") else ""
    )
    return out


def cmd_suspend(args: argparse.Namespace) -> int:
    """End the harness; the jobs and the campaign stay with the gateway."""
    from frontdesk.cli.output import emit

    client = _client()
    got = _suspend_one(client, client.request("GET", f"/v1/sessions/{_sid(args.id)}{_of(args)}"))
    text = (
        "suspended" if got["signalled"] else f"recorded as suspended ({got.get('reason')})"
    ) + f"; resume: {got['resume']}"
    emit(args.json, got, text)
    return 0


def _on_node(client: Any, node: str, all_users: bool) -> list[dict[str, Any]]:
    from urllib.parse import urlencode

    query = {"node": node, **({"all": "true"} if all_users else {})}
    rows: list[dict[str, Any]] = client.request("GET", "/v1/sessions?" + urlencode(query))
    return rows


def cmd_drain(args: argparse.Namespace) -> int:
    """Suspend every live session on the node; print how to resume each."""
    from frontdesk.cli.output import emit

    client = _client()
    rows = [r for r in _on_node(client, args.node, True) if r["turn_state"] != "ended"]  # all: an admin's; else own
    done = [_suspend_one(client, r) for r in rows]
    lines = [
        f"{d['session']}: {'suspended' if d['signalled'] else d.get('reason')}; resume: {d['resume']}" for d in done
    ]
    emit(args.json, {"node": args.node, "sessions": done}, "\n".join(lines) or f"no live sessions on {args.node}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Sessions (on one node with --node)."""
    from frontdesk.cli.agents import _table
    from frontdesk.cli.output import emit

    client = _client()
    if args.node:
        rows = _on_node(client, args.node, args.all)
    else:
        rows = client.request("GET", "/v1/sessions" + ("?all=true" if args.all else ""))
    emit(args.json, rows, lambda: _table(rows))
    return 0
