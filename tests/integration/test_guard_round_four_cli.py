"""The guard's fourth-round classes through the real CLI and hook, as fresh processes, with real files on disk.

Safety: nothing here runs a checked command. The one script on disk is a canary (`mkfs.ext4` on a device that
does not exist), refused by the same rule as a real wipe and harmless if it ran; HOME is a temp directory.
"""

from __future__ import annotations

from pathlib import Path

from guard_cli import guard_check, guard_hook

CANARY = "mkfs.ext4 /dev/fd-does-not-exist-canary"


def test_a_container_acting_on_a_mounted_home_is_denied(tmp_path: Path) -> None:
    code, out = guard_check(tmp_path, "docker run --rm -v ~:/h alpine rm -rf /h")
    assert (code, out["rule"]) == (2, "fs.rm-root"), out
    code, out = guard_check(tmp_path, 'docker run --rm -v "$PWD":/work -w /work python:3.12 python train.py')
    assert code == 0, out


def test_a_script_named_by_a_crontab_the_line_writes_is_read_from_disk(tmp_path: Path) -> None:
    script = tmp_path / "nightly.sh"
    script.write_text(f"#!/bin/bash\n{CANARY}\n")
    table = tmp_path / "table"
    code, out = guard_check(tmp_path, f"echo '0 3 * * * bash {script}' > {table}; crontab {table}")
    assert (code, out["rule"]) == (2, "disk.wipe"), out
    script.write_text("#!/bin/bash\necho nightly\n")
    code, out = guard_check(tmp_path, f"echo '0 3 * * * bash {script}' > {table}; crontab {table}")
    assert code != 2 and "disk.wipe" not in out["matches"], out  # (a script under /tmp still asks)


def test_the_hook_reads_here_strings_after_a_redirection(tmp_path: Path) -> None:
    assert guard_hook(tmp_path, "cat > notes.txt <<< 'hello'") == {}  # allow: no opinion (was a parse-error ask)
    answer = guard_hook(tmp_path, f"bash 2>&1 <<< '{CANARY}'")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "disk.wipe" in answer["permissionDecisionReason"]


def test_listed_entries_and_emptied_files_through_the_hook(tmp_path: Path) -> None:
    answer = guard_hook(tmp_path, "ls ~ | xargs -I{} rm -rf ~/{}")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "fs.rm-root" in answer["permissionDecisionReason"]
    answer = guard_hook(tmp_path, "truncate -s 0 ~/data/*")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "ask" and "fs.rm-wide" in answer["permissionDecisionReason"]
    answer = guard_hook(tmp_path, "emacs --batch --eval '(shell-command \"rm -rf ~\")'")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "fs.rm-root" in answer["permissionDecisionReason"]
