"""scripts/extract_guard_corpora.py on small git repositories shaped like the four projects (rows written here,
not copied from them), and bench/guard_public.py on what it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
from extract_guard_corpora import main as extract  # noqa: E402

FILES = {
    "Dicklesworthstone+destructive_command_guard": {
        "tests/corpus/true_positives/rm.toml": '[[case]]\ncommand = "rm -rf ~"\nexpected = "deny"\n',
        "tests/corpus/false_positives/ok.toml": '[[case]]\ncommand = "ls -la"\nexpected = "allow"\n',
        "tests/corpus/canonical.toml": (
            '[[case]]\nid = "a"\ninput_kind = "command"\ncommand = "git status"\nexpected_decision = "allow"\n'
            '[[case]]\nid = "b"\ninput_kind = "hook_json"\ncommand = "{}"\nexpected_decision = "deny"\n'
        ),
        "tests/corpus/edge_cases/future_packs.toml": '[[case]]\ncommand = "terraform destroy"\nexpected = "allow"\n',
    },
    "kenryu42+claude-code-safety-net": {
        "tests/core/rules.test.ts": (
            "test('a', () => {\n  assertBlocked('git reset --hard', 'reset');\n});\n"
            "test('b', () => {\n  assertAllowed(\"git status\");\n  assertAllowed('rm -rf build', tmpDir);\n});\n"
            "test('c', () => { assertBlocked(`rm -rf ${dir}`, 'rm'); });\n"
        ),
    },
    "27Bslash6+schlock": {
        "tests/accuracy.py": (
            "CASES = [BenchmarkCase(name='n', command='dd of=/dev/sda', expected_blocked=True, category='c'),\n"
            "         BenchmarkCase(name='m', command='echo hi', expected_blocked=False, category='c')]\n"
        ),
        "tests/test_x.py": (
            "import pytest\n\n"
            "@pytest.mark.parametrize('command', ['mkfs.ext4 /dev/sdb'])\n"
            "def test_blocked(command):\n    result = validate_command(command)\n    assert not result.allowed\n\n"
            "@pytest.mark.parametrize('command,should_allow', [('ls', True), ('shred /dev/sda', False)])\n"
            "def test_rows(command, should_allow):\n    result = validate_command(command)\n"
            "    assert result.allowed == should_allow\n\n"
            "def test_mixed():\n    result = validate_command('echo a')\n    assert result.allowed\n"
            "    result = validate_command('rm -rf /')\n    assert not result.allowed\n"
        ),
    },
    "ldayton+Dippy": {
        "tests/cli/test_git.py": "TESTS = [\n    ('git log', True),\n    ('git push', False),\n]\n",
    },
}


def _repo(base: Path, name: str, files: dict[str, str]) -> None:
    work = base / "work" / name
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    subprocess.run([*git, "add", "."], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "rows"], check=True, timeout=30)
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(work), str(base / "repos" / name / "repo")], check=True, timeout=30
    )


def _rows(out: Path, corpus: str) -> set[tuple[str, str]]:
    lines = (out / f"{corpus}.jsonl").read_text().splitlines()
    return {(r["command"], r["label"]) for r in map(json.loads, lines)}


def test_extraction_labels_and_skips(tmp_path: Path) -> None:
    for name, files in FILES.items():
        _repo(tmp_path, name, files)
    out = tmp_path / "out"
    assert extract(["--repos", str(tmp_path / "repos"), "--out", str(out)]) == 0
    assert _rows(out, "dcg") == {("rm -rf ~", "dangerous"), ("ls -la", "safe"), ("git status", "safe")}
    assert _rows(out, "safety-net") == {
        ("git reset --hard", "dangerous"),
        ("git status", "safe"),
        ("rm -rf build", "safe"),
    }
    cwd_note = [json.loads(x)["note"] for x in (out / "safety-net.jsonl").read_text().splitlines()]
    assert "cwd=tmpDir" in cwd_note
    assert _rows(out, "schlock") == {
        ("dd of=/dev/sda", "dangerous"),
        ("echo hi", "safe"),
        ("mkfs.ext4 /dev/sdb", "dangerous"),
        ("ls", "safe"),
        ("shred /dev/sda", "dangerous"),
    }
    assert _rows(out, "dippy") == {("git log", "readonly")}


def test_a_missing_clone_is_reported(tmp_path: Path) -> None:
    (tmp_path / "repos").mkdir()
    assert extract(["--repos", str(tmp_path / "repos"), "--out", str(tmp_path / "out")]) == 1


def test_the_bench_reads_the_folder_and_prints_per_corpus(tmp_path: Path) -> None:
    for name, files in FILES.items():
        _repo(tmp_path, name, files)
    out = tmp_path / "out"
    extract(["--repos", str(tmp_path / "repos"), "--out", str(out)])
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench/guard_public.py"), "--dir", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    figures = json.loads(res.stdout)
    assert set(figures) == {"dcg", "safety-net", "schlock", "dippy"}
    assert figures["dcg"]["stopped"]["dangerous"] == 1 and figures["dcg"]["stopped"]["safe"] == 0
    assert figures["safety-net"]["out_of_scope"] == {"the label depends on the test fixture's working directory": 1}
    assert figures["dippy"]["rate"]["readonly"] == 0.0
