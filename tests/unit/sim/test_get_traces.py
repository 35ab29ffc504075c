"""bench/get_traces.py copies the SWF blobs a git mirror holds (zip members extracted) and lists the rest."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import zipfile
from pathlib import Path

from frontdesk.sim.compare import load_workload

BENCH = Path(__file__).parents[3] / "bench" / "get_traces.py"
TRACE = "; MaxNodes: 4\n; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 1 1 -1 -1 -1\n"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("get_traces", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_copies_plain_and_zipped_traces_from_a_mirror(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "tiny.swf").write_text(TRACE)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("Zipped-1.swf", TRACE)
    (repo / "data" / "Zipped-1.swf.zip").write_bytes(buf.getvalue())
    (repo / "README").write_text("not a trace")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=repo, check=True, env={**env, "PATH": "/usr/bin:/bin"})
    dest = tmp_path / "traces"
    dest.mkdir()
    mod = _module()
    assert mod.main([str(dest), str(repo)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["Zipped-1.swf", "tiny.swf"]
    wl = load_workload(str(dest / "Zipped-1.swf"))
    assert wl.machine is not None and wl.machine.procs == 4 and len(wl.jobs) == 1
    assert mod.main([str(tmp_path / "missing"), str(repo)]) == 64
    assert mod.main([str(dest), str(tmp_path)]) == 66
