"""Copy Parallel Workloads Archive SWF traces out of fetched git mirrors into a folder you prepare.

Nothing is downloaded here: fetch the repositories first (any clone or mirror works), then

    python bench/get_traces.py DEST MIRROR_GIT_DIR [MIRROR_GIT_DIR ...]

Known sources (checked 2026-12-03; only the blobs a mirror actually holds are copied, the rest are listed):
- github:DIR-LAB/deep-batch-scheduler (RLScheduler, SC20): data/lublin_256.swf ("Lublin-1" in its table),
  data/lublin_256_new2 ("Lublin-2", copied as lublin_256_new2.swf), data/lublin-aaroh.swf (Lublin-Feitelson
  model, 256 nodes, 10k jobs each). Its HPC2N, SDSC-SP2/BLUE, CTC, ... files are too large
  to be kept in the stored snapshot: get them from https://www.cs.huji.ac.il/labs/parallel/workload/ by hand.
- github:cloudsimplus/cloudsimplus: src/test/resources/NASA-iPSC-1993-3.1-cln.swf.zip (128 nodes, 18k jobs).
- github:vaibhi/research (checked 2026-12-03): HPC2N-2002-2.2-cln.swf.gz (240 procs, 202k jobs after cleaning),
  SDSC-BLUE-2000-4.2-cln.swf.gz (1,152 procs on 144 nodes) and CTC-SP2-1996-3.1-cln.swf.gz (338 procs), the
  Archive's compressed files as published; the uncompressed copies beside them are not stored.
  SDSC-SP2-1998-4.2-cln was found in no stored repository (looked up by file name, .swf and .swf.gz).
The traces stay out of the repository (do not commit them).
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import zipfile
from pathlib import Path

WANTED = (".swf", ".swf.gz", ".swf.zip")
EXTENSIONLESS = ("lublin_256_new2",)
"""SWF files stored without the extension (given one when copied)."""


def _blobs(git_dir: Path) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [p for p in out.splitlines() if p.lower().endswith(WANTED) or Path(p).name in EXTENSIONLESS]


def _read(git_dir: Path, path: str) -> bytes | None:
    got = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "-p", f"HEAD:{path}"], capture_output=True)
    return got.stdout if got.returncode == 0 and got.stdout else None


def copy(dest: Path, git_dir: Path) -> list[str]:
    """Copy every SWF blob present in `git_dir` into `dest` (zip members extracted); lines to print."""
    lines = []
    for path in _blobs(git_dir):
        data = _read(git_dir, path)
        if data is None:
            lines.append(f"absent from this mirror (too large / not stored): {path}")
            continue
        if path.lower().endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                members = [(m, z.read(m)) for m in z.namelist() if m.lower().endswith(".swf")]
        else:
            name = Path(path).name
            members = [(name + ".swf" if name in EXTENSIONLESS else name, data)]
        for name, body in members:
            target = dest / Path(name).name
            target.write_bytes(body)
            lines.append(f"{target}  {len(body):>10} bytes  sha256 {hashlib.sha256(body).hexdigest()[:16]}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    dest = Path(argv[0])
    if not dest.is_dir():
        print(f"get_traces: {dest} is not a folder (create it first)", file=sys.stderr)
        return 64
    for mirror in argv[1:]:
        git_dir = Path(mirror)
        if not (git_dir / "HEAD").exists() and (git_dir / ".git").exists():
            git_dir = git_dir / ".git"
        try:
            print("\n".join(copy(dest, git_dir)))
        except subprocess.CalledProcessError as exc:
            print(f"get_traces: {mirror}: not a git repository ({exc.stderr.strip()})", file=sys.stderr)
            return 66
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
