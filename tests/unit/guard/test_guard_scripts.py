"""A script the command runs is read by its interpreter line, not by its name."""

from __future__ import annotations

from pathlib import Path

from frontdesk.guard.checker import check
from frontdesk.guard.context import read_text_file
from frontdesk.guard.model import Decision, GuardContext


def _ctx(tmp_path: Path) -> GuardContext:
    return GuardContext(env={"HOME": str(tmp_path)}, cwd=str(tmp_path), home=str(tmp_path), read_file=read_text_file)


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_python_console_script_without_an_extension_is_not_read_as_shell(tmp_path: Path) -> None:
    # What pip writes for an entry point: `sys.argv[0] = re.sub(...)` is Python, not an obfuscated command.
    tool = _script(
        tmp_path,
        "frontdesk",
        "#!/opt/venv/bin/python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom x import main\n"
        "if __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n",
    )
    verdict = check(f"{tool} run --name x -- sh -c 'sleep 3; echo hi' && echo done", _ctx(tmp_path))
    assert verdict.decision is Decision.ALLOW, verdict


def test_an_extensionless_shell_script_is_still_read(tmp_path: Path) -> None:
    tool = _script(tmp_path, "setup", "#!/usr/bin/env bash\nset -e\nmkfs.ext4 /dev/fd-does-not-exist\n")
    verdict = check(str(tool), _ctx(tmp_path))
    assert verdict.decision is not Decision.ALLOW and "in setup" in verdict.reason, verdict


def test_a_python_script_named_like_shell_is_read_as_code(tmp_path: Path) -> None:
    tool = _script(tmp_path, "job.sh", "#!/usr/bin/python3\nimport sys\nsys.argv[0] = sys.argv[0].strip()\n")
    assert check(str(tool), _ctx(tmp_path)).decision is Decision.ALLOW


def test_a_binary_is_not_parsed(tmp_path: Path) -> None:
    tool = _script(tmp_path, "prog", "\x7fELF\x02\x01\x01\x00\x00rm -rf ~\x00")
    assert check(str(tool), _ctx(tmp_path)).decision is Decision.ALLOW
