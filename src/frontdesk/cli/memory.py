"""`frontdesk memory ...`: classify a log offline; search, show, promote and forget lessons; resource advice.

`classify` runs here, without a gateway. The rest ask the gateway, which answers only with lessons the
caller's principal may read.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote, urlencode

from frontdesk.cli.output import emit
from frontdesk.cli.parsing import client, group

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the `memory` command group."""
    p, msub = group(sub, "memory", "failure memory: classify logs, search and share lessons, advice", "memory_command")

    c = msub.add_parser("classify", help="classify a log file offline: class, signature, matched line")
    c.add_argument("logfile", help="a log file, or - for stdin")
    c.add_argument("--state", help="the job's end state (e.g. OUT_OF_MEMORY, TIMEOUT, FAILED)")
    c.add_argument("--exit-code", type=int, help="the job's exit code")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_classify)

    s = msub.add_parser("search", help="full-text search over the lessons you may read")
    s.add_argument("text", nargs="*", help="words to look for (none: the most recent lessons)")
    s.add_argument("--limit", type=int, default=20)
    s.add_argument("--all", action="store_true", help="include invalidated lessons and your labs' proposals")
    s.add_argument("--state", help="only lessons of jobs that ended in this state (e.g. OUT_OF_MEMORY)")
    s.add_argument("--kind", help="only lessons of this failure kind (e.g. cuda_oom, missing_import)")
    s.add_argument("--command", help="only lessons about this command (any spelling of it, quoted)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_search)

    sh = msub.add_parser("show", help="one lesson with its provenance, conditions and evidence")
    sh.add_argument("id", type=int)
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(func=cmd_show)

    pr = msub.add_parser(
        "promote", help="share a lesson with a wider scope (secrets stripped); a lab/project proposal: approve it"
    )
    pr.add_argument("id", type=int)
    pr.add_argument("--scope", required=True, choices=["project", "lab", "cluster"])
    pr.add_argument("--name", help="which project or lab (needed when you belong to several)")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=cmd_promote)

    f = msub.add_parser("forget", help="delete a lesson")
    f.add_argument("id", type=int)
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_forget)

    a = msub.add_parser("advice", help="requested versus used resources from your finished jobs")
    a.add_argument("--template", help="only this command template")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_advice)


def cmd_classify(args: argparse.Namespace) -> int:
    """Classify a log file without a gateway."""
    from frontdesk.memory.classify import classify

    sig = classify(_read_log(args.logfile), args.state, args.exit_code)
    data = sig.to_dict()
    lines = [f"{sig.kind}: {sig.cause}", f"signature: {sig.key}"]
    if sig.line:
        lines.append(f"line: {sig.line}")
    if sig.next_step:
        lines.append(f"next: {sig.next_step}")
    emit(args.json, data, "\n".join(lines))
    return 0


MAX_LOG_BYTES = 8 << 20
"""What `memory classify` reads of a log: a file's last 8 MiB; at most 8x that from a pipe."""


def _read_log(name: str) -> str:
    """The log to classify: a regular file's tail, or stdin (`-`); a FIFO or device is refused at once
    (`/dev/zero` filled memory, a FIFO nobody writes hung)."""
    import os
    import stat

    from frontdesk.errors import UserError

    if name == "-":
        raw = sys.stdin.buffer.read(8 * MAX_LOG_BYTES + 1)
        if len(raw) > 8 * MAX_LOG_BYTES:
            raise UserError(f"-: more than {8 * MAX_LOG_BYTES >> 20} MiB on stdin: pass the log as a file")
        return raw[-MAX_LOG_BYTES:].decode(errors="replace")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UserError(f"{name}: not a regular file (pipe it to `frontdesk memory classify -`)")
            fh.seek(max(0, st.st_size - MAX_LOG_BYTES))
            return fh.read(MAX_LOG_BYTES).decode(errors="replace")
    except OSError as exc:
        raise UserError(f"{name}: {exc.strerror or exc}") from None


def _lesson_text(lesson: dict[str, Any]) -> str:
    prov = lesson["provenance"]
    ctx = lesson["context"]
    out = [
        f"lesson {lesson['id']} [{lesson['scope']}:{lesson['scope_name']}] {lesson['status']}"
        + (f" ({lesson['status_reason']})" if lesson.get("status_reason") else ""),
        f"  {lesson['text']}",
        f"  signature: {lesson['signature']}",
        f"  template: {ctx['template'] or '(any)'}  application: {ctx['application'] or '?'}",
    ]
    if lesson.get("fix"):
        out.append(f"  fix: {lesson['fix'].get('changes')}  evidence: jobs {lesson['fix'].get('evidence')}")
    out.append(
        f"  source: {prov['source']} by {prov['created_by']}; seen {prov['times_seen']}x, held {prov['times_held']}x"
    )
    return "\n".join(out)


def cmd_search(args: argparse.Namespace) -> int:
    """Search lessons."""
    params = {"q": " ".join(args.text), "limit": args.limit, "all": "true" if args.all else "false"}
    params.update({k: v for k in ("state", "kind", "command") if (v := getattr(args, k))})
    q = urlencode(params)
    res = client().request("GET", f"/v1/memory/search?{q}")
    emit(args.json, res, lambda: "\n".join(_lesson_text(x) for x in res["lessons"]) or "no lessons")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Show one lesson."""
    res = client().request("GET", f"/v1/memory/lessons/{args.id}")
    emit(args.json, res, lambda: _lesson_text(res))
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    """Promote a lesson to a wider scope."""
    body = {"scope": args.scope, **({"name": args.name} if args.name else {})}
    res = client().request("POST", f"/v1/memory/lessons/{args.id}/promote", body)
    prov = res.get("provenance") or {}
    if prov.get("pending_by"):
        where = res.get("scope") or "scope"
        head = f"proposed as lesson {res['id']}: it holds once another member of the {where} (or an admin) promotes it"
    elif prov.get("approved_by") and res["id"] == args.id:
        head = f"approved lesson {res['id']}"
    else:
        head = f"promoted as lesson {res['id']}"
    emit(args.json, res, lambda: head + "\n" + _lesson_text(res))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget a lesson."""
    res = client().request("DELETE", f"/v1/memory/lessons/{args.id}")
    emit(args.json, res, f"forgot lesson {res['forgotten']}")
    return 0


def cmd_advice(args: argparse.Namespace) -> int:
    """Resource advice from finished jobs."""
    path = "/v1/memory/advice" + (f"?template={quote(args.template)}" if args.template else "")
    res = client().request("GET", path)

    def text() -> str:
        out = []
        for item in res["advice"]:
            out.append(f"{item['template'][:80]} ({item['completed']} completed runs)")
            out += [f"  {line}" for line in item["lines"]]
        return "\n".join(out) or "no advice: requests match what jobs used (or no finished jobs yet)"

    emit(args.json, res, text)
    return 0
