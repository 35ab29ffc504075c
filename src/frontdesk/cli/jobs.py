"""Job commands: submit, run, wait, status, queue, cancel, logs, report, events. Thin: stdlib + client only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from frontdesk.cli.output import emit
from frontdesk.cli.parsing import client as _client
from frontdesk.cli.termtext import for_terminal

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["register"]


def _context(source: str) -> dict[str, Any]:
    from frontdesk.agents.detect import detect_context
    from frontdesk.jobenv import capture_env

    ctx = detect_context()
    ctx["source"] = source
    ctx["env"] = capture_env()  # the whole environment (sbatch --export=ALL); the gateway applies the denylist
    return ctx


def _seconds_to_wait(text: str) -> float:
    """`--timeout`: seconds a gateway will wait (checked before anything is submitted)."""
    from frontdesk.client import MAX_WAIT_S

    try:
        value = float(text) if text.isascii() and "_" not in text else float("nan")  # not '١' nor 1_0
    except ValueError:
        value = float("nan")
    if not 0 <= value <= MAX_WAIT_S:  # NaN included
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to {MAX_WAIT_S}, got {text!r}")
    return value


def _add_wait_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", action="store_true", help="block until the job ends and print its report")
    p.add_argument("--timeout", type=_seconds_to_wait, help="with --wait: give up after this many seconds (exit 124)")


def register(sub: Any) -> None:
    """Add the job commands."""
    _add_submit_commands(sub)
    _add_job_commands(sub)


def _add_submit_commands(sub: Any) -> None:
    """`submit` (a spec file) and `run` (a command line with the spec as flags)."""
    p = sub.add_parser("submit", help="submit a job spec (YAML or JSON file, or - for stdin)")
    p.add_argument("spec", help="path to job.yaml / job.json, or -")
    p.add_argument("--json", action="store_true")
    _add_wait_flags(p)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("run", help="submit a one-line command: frontdesk run [flags] -- CMD ARGS...")
    p.add_argument("--name")
    p.add_argument("--cpus", type=int)
    p.add_argument("--mem", help="memory limit, e.g. 8G")
    p.add_argument("--gpus", type=_gpu_count, help="whole GPUs, or a fraction of one (0.25) to share a GPU")
    p.add_argument("--gpu-mem", help="GPU memory on a shared GPU (20G): packed with other shared jobs by memory")
    p.add_argument("--gpu-type", action="append", help="acceptable GPU model (repeatable)")
    p.add_argument("--time", help="walltime, e.g. 10m, 2h, 01:30:00")
    p.add_argument("--type", choices=["hpc", "training", "inference", "agent"])
    p.add_argument("--trial", action="store_true", help="a short exploratory run")
    p.add_argument("--after", action="append", default=[], help="job id or name this one depends on (repeatable)")
    p.add_argument("--retry", type=int, help="retries on failure")
    p.add_argument("--pool", help="pool / partition")
    p.add_argument("--workdir")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--idempotency-key")
    p.add_argument("--array", help="task indices: 0-9, 1,3,5-9, 0-99%%8 (at most 8 at once)")
    p.add_argument(
        "--sweep", action="append", default=[], metavar="NAME=V1,V2", help="a sweep parameter (repeatable: a grid)"
    )
    p.add_argument("--aftercorr", help="array id or name: task i starts once its task i completed")
    p.add_argument("--array-report", choices=["end", "first_failure"], help="when the array's one report is told")
    p.add_argument("--json", action="store_true")
    _add_wait_flags(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command to run")
    p.set_defaults(func=cmd_run)


def _add_job_commands(sub: Any) -> None:
    """The commands on submitted jobs: wait, status/jobs, queue, cancel, logs, report, retry, events."""
    p = sub.add_parser("wait", help="block (on the gateway) until jobs end; prints their reports")
    p.add_argument("ids", nargs="+")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--any", dest="mode", action="store_const", const="any")
    g.add_argument("--all", dest="mode", action="store_const", const="all")
    p.add_argument("--timeout", type=_seconds_to_wait)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_wait, mode="all")

    for command in ("status", "jobs"):
        p = sub.add_parser(command, help="one job's record (12, or task 12_3 of array 12), or your recent jobs")
        p.add_argument("ids", nargs="*")
        p.add_argument("--tasks", action="store_true", help="an array's tasks, one line each")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=cmd_status)

    p = sub.add_parser("queue", help="jobs that have not ended")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_queue)

    p = sub.add_parser("cancel", help="cancel jobs (kills the whole process tree)")
    p.add_argument("ids", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("logs", help="the end of a job's output")
    p.add_argument("id")
    p.add_argument("--tail", type=int, default=50)
    p.add_argument("--stderr", action="store_true", help="stderr instead of stdout")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_logs)

    p = sub.add_parser("report", help="an ended job's report")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("retry", help="run again: an array's tasks that did not complete (ID), or one job (ID, ID_3)")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    _add_wait_flags(p)
    p.set_defaults(func=_retry)

    p = sub.add_parser("events", help="the event journal (--follow streams it)")
    p.add_argument("--since", type=int, default=0, help="resume after this sequence number")
    p.add_argument("--follow", "-f", action="store_true")
    p.add_argument("--job", type=int)
    p.add_argument("--limit", type=int, help="stop after this many events (says so, and where to resume)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_events)


def _submitted(args: argparse.Namespace, job: dict[str, Any]) -> int:
    for warning in job.get("warnings", []):
        sys.stderr.write(f"frontdesk: warning: {warning}\n")
    if args.wait:
        res = _client().wait([job["id"]], "all", args.timeout)
        return _print_wait(args, res, submitted=job)
    emit(args.json, job, str(job["id"]))
    from frontdesk.agents.readmark import delivery_note

    note = delivery_note(_client(5), job)  # issue 19: how the report will come back to the agent session
    if note:
        sys.stderr.write(note + "\n")
    return 0


MAX_SPEC_BYTES = 16 << 20
"""The most `frontdesk submit` reads of a spec file (the gateway's body cap is smaller: 1 MiB by default)."""


def cmd_submit(args: argparse.Namespace) -> int:
    """Submit a spec file; the gateway validates it (one-line error naming the field, exit 2)."""
    from frontdesk.errors import SpecError

    if args.spec == "-":
        raw, fmt = sys.stdin.buffer.read(MAX_SPEC_BYTES + 1), None
    else:
        path = Path(args.spec)
        try:
            with open(path, "rb") as fh:  # bounded: /dev/zero or a runaway generator never fills memory
                raw = fh.read(MAX_SPEC_BYTES + 1)
        except OSError as exc:
            raise SpecError(f"{path}: {exc.strerror}") from None
        fmt = "json" if path.suffix == ".json" else "yaml"
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{args.spec}: more than {MAX_SPEC_BYTES >> 20} MiB: not a job spec")
    text = raw.decode("utf-8", errors="surrogateescape")
    job = _client().submit(spec_text=text, fmt=fmt, context=_context("cli"))
    return _submitted(args, job)


def _gpu_count(text: str) -> int | float:
    """`--gpus`: a whole number, or a fraction (the spec says what is valid)."""
    if not text.isascii() or "_" in text:  # float() reads '٠.٥' and '1_0'
        raise argparse.ArgumentTypeError(f"expected a number such as 2 or 0.25, got {text!r}")
    value = float(text)
    return int(value) if value.is_integer() else value


def cmd_run(args: argparse.Namespace) -> int:
    """Build a spec from flags and a command line."""
    from frontdesk.errors import UserError

    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        raise UserError("no command given: frontdesk run [flags] -- CMD ARGS...")
    spec: dict[str, Any] = {"command": cmd, "resources": {}}
    res = spec["resources"]
    for flag, key in (("cpus", "cpus"), ("mem", "memory"), ("gpus", "gpus"), ("time", "walltime")):
        if getattr(args, flag) is not None:
            res[key] = getattr(args, flag)
    if args.gpu_type:
        res["gpu"] = {"type": args.gpu_type}
    if args.gpu_mem:
        res.setdefault("gpu", {})["memory"] = args.gpu_mem
    for flag, key in (
        ("name", "name"),
        ("type", "type"),
        ("pool", "pool"),
        ("workdir", "workdir"),
        ("idempotency_key", "idempotency_key"),
    ):
        if getattr(args, flag) is not None:
            spec[key] = getattr(args, flag)
    if args.trial:
        spec["trial"] = True
    if args.after:
        spec["depends_on"] = [int(a) if a.isdigit() else a for a in args.after]
    if args.retry is not None:
        spec["retry"] = {"count": args.retry}
    from frontdesk.cli.arrays import array_flags

    array_flags(args, spec)
    if args.env:
        env = {}
        for item in args.env:
            key, sep, value = item.partition("=")
            if not sep:
                raise UserError(f"--env expects KEY=VALUE, got {item!r}")
            env[key] = value
        spec["env"] = env
    job = _client().submit(spec=spec, context=_context("cli"))
    return _submitted(args, job)


def task_ids(client: Any, texts: list[str]) -> list[int | str]:
    """Job ids for `12` and `12_3` (task 3 of array 12): see frontdesk.cli.arrays."""
    from frontdesk.cli.arrays import task_ids as resolve

    return resolve(client, texts)


def _print_wait(args: argparse.Namespace, res: dict[str, Any], submitted: dict[str, Any] | None = None) -> int:
    from frontdesk.errors import WaitTimeout

    if args.json:
        emit(True, res if submitted is None else {**res, "job": submitted})
    else:
        for rep in res["reports"]:
            sys.stdout.write(for_terminal(rep["text"] + "\n\n", sys.stdout))
        sys.stdout.flush()
    from frontdesk.agents.readmark import mark_read

    mark_read(_client(5), res["reports"], "run" if submitted else "wait")  # read here: no hook brings it again
    if not res["done"]:
        raise WaitTimeout(f"still running after the timeout: {', '.join(str(i) for i in res['pending'])}")
    from frontdesk.jobs.state import JobState

    bad = [r for r in res["reports"] if r["state"] != JobState.COMPLETED]
    return 1 if bad and len(bad) == len(res["reports"]) else 0


def cmd_wait(args: argparse.Namespace) -> int:
    """Long-poll the gateway; exit 0 when the awaited jobs completed, 1 when they all failed, 124 on timeout."""
    from frontdesk.client import _jid

    c = _client()
    ids: list[int | str] = [_jid(i) for i in task_ids(c, args.ids)]
    return _print_wait(args, c.wait(ids, args.mode, args.timeout))


def _row(job: dict[str, Any]) -> str:
    name = (job.get("name") or job.get("spec", {}).get("name") or "-")[:24]
    reason = job.get("reason") or ""
    array = job.get("array")
    if array:  # an array on one line: its tasks counted by state
        counts = ", ".join(f"{n} {s}" for s, n in sorted(array["counts"].items(), key=lambda kv: (-kv[1], kv[0])))
        limit = f" %{array['max_running']}" if array.get("max_running") else ""
        reason = f"array of {array['size']}{limit}: {counts}"
    ident = f"{job['array_id']}_{job['array_index']}" if job.get("array_id") is not None else str(job["id"])
    return f"{ident:>6}  {name:<24} {job['state']:<13} {job.get('job_class') or '-':<9} {reason}"


_HEADER = f"{'ID':>6}  {'NAME':<24} {'STATE':<13} {'CLASS':<9} REASON"


def cmd_status(args: argparse.Namespace) -> int:
    """Records of the given jobs (or the 20 newest)."""
    c = _client()
    if args.tasks:  # the tasks of the given arrays
        jobs = [t for i in task_ids(c, args.ids) for t in c.jobs(array=i, limit=100000)[::-1]]
        emit(args.json, jobs, lambda: "\n".join([_HEADER, *(_row(j) for j in jobs)]))
        return 0
    jobs = [c.job(i) for i in task_ids(c, args.ids)] if args.ids else c.jobs(limit=20)
    data: Any = jobs[0] if len(args.ids) == 1 else jobs
    emit(args.json, data, lambda: "\n".join([_HEADER, *(_row(j) for j in jobs)]))
    return 0


def cmd_queue(args: argparse.Namespace) -> int:
    """Jobs that have not ended, oldest first."""
    res = _client().request("GET", "/v1/queue")
    jobs = [j for j in res["jobs"] if j.get("array_id") is None]  # an array is one line (its counts)
    emit(args.json, res, lambda: "\n".join([_HEADER, *(_row(j) for j in jobs)]) if jobs else "queue is empty")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel each job; exit non-zero if any could not be cancelled (an ended job of this session is no error)."""
    from frontdesk.agents.readmark import cancel_line, cancel_once
    from frontdesk.errors import FrontdeskError

    c, out, code = _client(), [], 0
    for i in task_ids(c, args.ids):
        try:
            out.append(cancel_once(c, i))  # issue 18: a replayed turn may cancel an ended job of its session again
        except FrontdeskError as exc:
            sys.stderr.write(f"frontdesk: {exc.message}\n")
            out.append({"id": i, **exc.to_payload()})
            code = max(code, exc.exit_code)
    emit(args.json, out, lambda: "\n".join(cancel_line(j) for j in out if "error" not in j))
    return code


def _retry(args: argparse.Namespace) -> int:
    from frontdesk.cli.arrays import cmd_retry

    return cmd_retry(args)


def cmd_logs(args: argparse.Namespace) -> int:
    """The last lines of stdout (or stderr)."""
    c = _client()
    res = c.logs(task_ids(c, [args.id])[0], args.tail, "stderr" if args.stderr else "stdout")
    emit(args.json, res, "\n".join(res["lines"]))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """The stored report."""
    from frontdesk.agents.readmark import mark_read

    c = _client()
    rep = c.report(task_ids(c, [args.id])[0])
    emit(args.json, rep, rep["text"])
    mark_read(_client(5), [rep], "report")
    return 0


def _event_pages(client: Any, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Every event after --since: the gateway answers a page at a time, so fetch pages until one is empty."""
    if args.follow:
        yield from client.events(since=args.since, follow=True, job=args.job)
        return
    since = args.since
    while True:
        page = list(client.events(since=since, follow=False, job=args.job))
        if not page:
            return
        yield from page
        since = page[-1]["seq"]


def cmd_events(args: argparse.Namespace) -> int:
    """Print events; with --follow, stream them until interrupted."""
    import json

    if args.limit is not None and args.limit < 1:
        from frontdesk.errors import UserError

        raise UserError(f"--limit: expected 1 or more events, got {args.limit}")
    shown, last = 0, args.since
    for event in _event_pages(_client(), args):
        if args.limit is not None and shown >= args.limit:
            sys.stderr.write(f"frontdesk: stopped at the limit of {args.limit} events; more with --since {last}\n")
            return 0
        shown, last = shown + 1, event["seq"]
        if args.json:
            sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
        else:
            data = event.get("data", {})
            detail = data.get("state") or data.get("text") or data.get("name") or ""
            job = f" job {event['job_id']}" if event.get("job_id") else ""
            sys.stdout.write(for_terminal(f"{event['seq']:>6} {event['kind']}{job} {detail}\n", sys.stdout))
        sys.stdout.flush()
    return 0
