"""The PostToolUse note after a recursive grep/find/du on a shared filesystem (storage/hint.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from frontdesk.storage.hint import note, shared, walks

MOUNTS = sorted(
    [("/", "ext4"), ("/home", "nfs4"), ("/lustre", "lustre"), ("/lustre/local", "xfs")], key=lambda r: -len(r[0])
)


@pytest.mark.parametrize(
    ("command", "kind", "roots", "instead"),
    [
        ("grep -rn 'CUDA out' logs/", "grep", ("logs/",), "frontdesk fs grep -n 'CUDA out' logs/"),
        (
            "grep -Rl --include='*.py' torch src lib",
            "grep",
            ("src", "lib"),
            "frontdesk fs grep -l '--include=*.py' torch src lib",
        ),
        ("grep -r -e x -e y", "grep", (".",), "frontdesk fs grep -e x -e y"),
        ("cd /x && grep -rnC 2 err . | head", "grep", (".",), "frontdesk fs grep -nC 2 err ."),
        ("rg -n -g '*.py' torch /lustre/p", "grep", ("/lustre/p",), "frontdesk fs grep -n -g '*.py' torch /lustre/p"),
        ("find . -name '*.ckpt' -size +1G", "find", (".",), "frontdesk fs find . -name '*.ckpt' -size +1G"),
        ("sudo find", "find", (".",), "frontdesk fs find"),
        ("FOO=1 du -sh data/ other", "du", ("data/", "other"), "frontdesk fs du -sh data/ other"),
    ],
)
def test_a_recursive_walk_is_recognised_with_its_roots_and_its_operator_form(
    command: str, kind: str, roots: tuple[str, ...], instead: str
) -> None:
    [walk] = walks(command)
    assert (walk.kind, walk.roots, walk.instead) == (kind, roots, instead)


@pytest.mark.parametrize(
    "command", ["grep x file.txt", "grep -n x a b", "echo find", "ls -R", "cat 'unbalanced", "grep -v r f"]
)
def test_a_command_that_walks_nothing_gets_no_note(command: str) -> None:
    assert walks(command) == []


def test_the_filesystem_type_or_a_configured_prefix_makes_a_path_shared() -> None:
    assert shared("/home/a/src", MOUNTS, []) == "nfs4 at /home"
    assert shared("/lustre/proj", MOUNTS, []) == "lustre at /lustre"
    assert shared("/lustre/local/x", MOUNTS, []) is None  # the longest mount point decides
    assert shared("/homework", MOUNTS, []) is None  # a mount point is a path, not a string prefix
    assert shared("/data/x", MOUNTS, ["/data"]) == "under /data"
    assert shared("/tmp/fuse", [("/tmp/fuse", "fuse.sshfs"), ("/", "ext4")], []) == "fuse.sshfs at /tmp/fuse"


def _payload(command: str, cwd: str = "/home/a", tool: str = "Bash") -> dict[str, object]:
    return {"tool_name": tool, "tool_input": {"command": command}, "cwd": cwd, "session_id": "s1"}


def test_the_note_names_the_path_the_reason_and_the_command_to_use_instead() -> None:
    found = note(_payload("grep -rn TODO src"), {}, MOUNTS)
    assert found is not None and found[0] == "grep"
    assert found[1].startswith("frontdesk: that grep walked /home/a/src on a shared filesystem (nfs4 at /home)")
    assert "`frontdesk fs grep -n TODO src`" in found[1] and "\n" not in found[1]
    assert note(_payload("grep -rn TODO src", cwd="/tmp"), {}, MOUNTS) is None
    assert note(_payload("grep -rn TODO /tmp/x", cwd="/home/a"), {}, MOUNTS) is None  # where it walked counts
    assert note(_payload("grep -rn TODO src", tool="Read"), {}, MOUNTS) is None
    assert note({"tool_name": "Bash", "tool_input": "x", "cwd": "/"}, {}, MOUNTS) is None


def _hook(payload: object, home: Path, prefixes: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "FRONTDESK_FS_HINT_PREFIXES": prefixes, "PATH": "/usr/bin:/bin"}
    text = payload if isinstance(payload, str) else json.dumps(payload)
    argv = [sys.executable, "-m", "frontdesk.storage.hint"]
    return subprocess.run(argv, input=text, capture_output=True, text=True, env=env, timeout=30)


def test_the_hook_says_it_once_per_session_and_kind_and_never_fails(tmp_path: Path) -> None:
    tree = tmp_path / "shared"
    grep = {**_payload("grep -r x .", cwd=str(tree)), "session_id": "one"}
    first = _hook(grep, tmp_path, str(tree))
    assert first.returncode == 0 and first.stderr == ""
    out = json.loads(first.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUse" and f"walked {tree} on a shared filesystem" in out["additionalContext"]
    assert _hook(grep, tmp_path, str(tree)).stdout == ""  # said once for this session's greps
    find = {**_payload("find . -name x", cwd=str(tree)), "session_id": "one"}
    assert "that find walked" in _hook(find, tmp_path, str(tree)).stdout  # another kind
    assert "that grep walked" in _hook({**grep, "session_id": "two"}, tmp_path, str(tree)).stdout  # another session
    for bad in ("not json", "[1]", {"tool_name": "Bash"}):
        r = _hook(bad, tmp_path, str(tree))
        assert (r.returncode, r.stdout) == (0, "")
