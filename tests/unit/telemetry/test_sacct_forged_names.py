"""`frontdesk analyze --sacct run`: a job name holding a newline cannot forge another user's accounting record.

sacct prints a newline in a job name as it is. With JobName among the record's fields, bob's failed job named
`x` + newline + `99|alice|COMPLETED|...` printed a second line that read as alice's job 99. `run_sacct` now asks
for the records without any name (RECORD_FIELDS) and for the names apart. The lab keeps no accounting, so a
stand-in `sacct` on PATH prints what the real one prints for each `-o` (the output above, byte for byte as
sacct writes it: one line per job, the name's newline kept).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.telemetry import sacct

T = "2026-12-03T10:00:00"
FORGED = f"99|alice|COMPLETED|{T}|{T}|{T}|hpc|64|cpu=64"
NAME = f"x\n{FORGED}|fake"
RECORD = f"100|bob|FAILED|{T}|{T}|2026-12-03T10:00:05|hpc|1|cpu=1"


def _stand_in(bin_dir: Path) -> None:
    (bin_dir / "with-names.txt").write_text(f"{RECORD}|{NAME}\n")
    (bin_dir / "records.txt").write_text(f"{RECORD}\n")
    (bin_dir / "names.txt").write_text(f"100|{NAME}\n")
    script = bin_dir / "sacct"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  *"-o {",".join(sacct.FIELDS)}"*) cat "{bin_dir}/with-names.txt" ;;\n'
        f'  *"-o {",".join(sacct.RECORD_FIELDS)}"*) cat "{bin_dir}/records.txt" ;;\n'
        f'  *"-o JobIDRaw,JobName"*) cat "{bin_dir}/names.txt" ;;\n'
        '  *) echo "unexpected: $*" >&2; exit 1 ;;\n'
        "esac\n"
    )
    script.chmod(0o755)


def test_a_name_with_a_newline_forges_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "JobName" not in sacct.RECORD_FIELDS and "JobName" in sacct.FIELDS
    _stand_in(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    got = sacct.run_sacct(None, None)
    assert [(j.user, j.source_id) for j in got.jobs] == [("bob", "100")], got
    assert got.jobs[0].signature == "failed:x"  # the name's first line, for bob's own job only
    old = sacct.parse((tmp_path / "with-names.txt").read_text().splitlines())  # the one query it used to run
    assert sorted(j.user for j in old.jobs) == ["alice", "bob"]  # what the stand-in shows the fix prevents
