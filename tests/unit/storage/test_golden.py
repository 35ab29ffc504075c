"""What `frontdesk fs` prints (text and --json) on a fixed tree, pinned by golden files.

Regenerate on purpose with FRONTDESK_REGEN_GOLDEN=1 and review the diff. The tree's path is written ROOT;
du's numbers depend on the filesystem's block sizes and are written N.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from frontdesk.storage.fs import Fs
from frontdesk.storage.model import Op
from frontdesk.storage.ops import FsRequest, run

GOLDEN = Path(__file__).parents[2] / "golden" / "storage"

QUESTIONS: list[tuple[str, Op, tuple[str, ...]]] = [
    ("grep_context", Op.GREP, ("-n", "-C", "1", "-g", "!vendor", "error", "ROOT")),
    ("grep_count", Op.GREP, ("-c", "-i", "error", "ROOT")),
    ("grep_files", Op.GREP, ("-l", "-F", "a.b", "ROOT")),
    ("find", Op.FIND, ("ROOT", "-type", "f", "-name", "*.log", "-size", "-2k")),
    ("head", Op.HEAD, ("-n", "2", "ROOT/logs")),
    ("tail", Op.TAIL, ("--lines", "2:3", "ROOT/logs/run1.log")),
    ("wc", Op.WC, ("ROOT/logs",)),
    ("tree", Op.TREE, ("-L", "1", "ROOT")),
    ("du", Op.DU, ("-d", "1", "ROOT")),
]


def _tree(root: Path) -> None:
    (root / "logs").mkdir()
    (root / "vendor").mkdir()
    (root / "logs" / "run1.log").write_text("start\nload a.b\nERROR: CUDA out of memory\nretry\nerror again\nend\n")
    (root / "logs" / "run2.log").write_text("start\nok\n")
    (root / "vendor" / "lib.log").write_text("error in vendor\n")
    (root / "blob.bin").write_bytes(b"\0error\0")
    (root / "caf\xe9.txt".encode("latin-1").decode("utf-8", "surrogateescape")).write_text("error: name is latin-1\n")
    for path in root.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))


@pytest.mark.parametrize(("name", "op", "argv"), QUESTIONS, ids=[q[0] for q in QUESTIONS])
def test_rendered_answers_match_the_golden_files(tmp_path: Path, name: str, op: Op, argv: tuple[str, ...]) -> None:
    _tree(tmp_path)
    root = str(tmp_path)
    result = run(FsRequest(op, tuple(a.replace("ROOT", root) for a in argv), "/", limit=4), Fs())
    data = result.to_json()
    data["cursor"] = "CURSOR" if data["cursor"] else None
    rendered = (json.dumps(data, indent=2, sort_keys=True) + "\n" + str(data["text"])).replace(root, "ROOT")
    if op is Op.DU:
        rendered = re.sub(r"(\"bytes\": |^)\d+", r"\1N", rendered, flags=re.M)
    path = GOLDEN / f"{name}.txt"
    raw = rendered.encode("utf-8", "surrogateescape")  # a name that is not UTF-8 is printed byte for byte
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.write_bytes(raw)
    assert raw == path.read_bytes(), f"fs {op.value} output changed; regenerate on purpose and review"
