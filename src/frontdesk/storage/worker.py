"""A storage worker: runs the operators as one identity, one JSON question per line on stdin.

Started by the gateway's storage plug-in (`python -P -m frontdesk.storage.worker --uid U --gid G`) as root in
facility mode; it becomes the caller (supplementary groups of the user, gid, uid) before reading anything, so
every open, stat and readdir is checked by the kernel against the caller's own permissions, never the
gateway's. It lives on between questions so its listing cache (`Fs`) keeps repeated exploration cheap.
Answers: one JSON line each, the Result, or {"error": code, "message": ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# Everything a question needs is imported before the worker becomes the caller: the caller may not be able
# to read the interpreter's library directory (a root-owned pyenv under /root).
from frontdesk.errors import FrontdeskError
from frontdesk.storage.fs import Fs
from frontdesk.storage.model import Op
from frontdesk.storage.ops import DEFAULT_LIMIT, FsRequest, run
from frontdesk.storage.watch import Watcher

__all__ = ["become", "main", "serve"]


def become(uid: int, gid: int, user: str | None) -> None:
    """Drop to uid/gid with the user's supplementary groups, for good; refuse to go on otherwise."""
    if os.geteuid() != 0:
        if os.geteuid() != uid:
            raise PermissionError(f"a worker for uid {uid} cannot run as uid {os.geteuid()}")
        return
    groups = os.getgrouplist(user, gid) if user else [gid]
    os.setgroups(groups)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise PermissionError(f"could not become uid {uid}")


def _watcher() -> Watcher | None:
    try:
        return Watcher()
    except (OSError, AttributeError):  # no inotify here: the cache checks directory mtime/ctime instead
        return None


def serve(watch: bool = True) -> None:
    """Answer questions from stdin until it closes."""
    fs = Fs(watcher=_watcher() if watch else None)
    out = sys.stdout
    for line in sys.stdin:
        try:
            q = json.loads(line)
            req = FsRequest(
                Op(q["op"]), tuple(str(a) for a in q["argv"]), str(q["cwd"]),
                int(q.get("limit") or DEFAULT_LIMIT), q.get("cursor") or None,
            )  # fmt: skip
            os.chdir(req.cwd)
            answer: dict[str, object] = run(req, fs).to_json()
        except FrontdeskError as exc:
            answer = exc.to_payload()
        except OSError as exc:
            answer = {"error": "bad_input", "message": f"{exc.filename or ''}: {exc.strerror or exc}"}
        except (ValueError, KeyError, TypeError) as exc:
            answer = {"error": "bad_input", "message": f"bad question: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
        fs.settle()  # the content cache's bookkeeping, after the caller has its answer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="frontdesk-storage-worker")
    p.add_argument("--uid", type=int, required=True)
    p.add_argument("--gid", type=int, required=True)
    p.add_argument("--user", default=None)
    p.add_argument("--no-inotify", action="store_true", help="check directory mtime/ctime instead (NFS)")
    args = p.parse_args(argv)
    become(args.uid, args.gid, args.user)
    os.chdir("/")
    serve(watch=not args.no_inotify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
