#!/usr/bin/env python3
"""Extract the labelled command rows of four public command guards' test files into JSONL, for
bench/guard_public.py. Reads local git clones (bare or not); fetches nothing, copies no code.

    python scripts/extract_guard_corpora.py --repos /work/.mirror [--out /tmp/guard-corpora]

`--repos DIR` holds one clone per project, found as DIR/<owner>+<name>[/repo], DIR/<name> or
DIR/<owner>/<name>. The rows stay on the developer's machine: the projects' licences do not let us commit
their test data, only this extractor. Each output line is
{"corpus", "command", "label" (dangerous | safe | readonly), "source" (file:line), "note"}.

  dcg          Dicklesworthstone/destructive_command_guard: tests/corpus/**/*.toml but future_packs,
               `[[case]]` rows with expected / expected_decision deny → dangerous, allow → safe
  safety-net   kenryu42/claude-code-safety-net: tests/**/*.test.ts, assertBlocked('...') → dangerous,
               assertAllowed('...') → safe (string literals only; a test-specific cwd goes in `note`)
  schlock      27Bslash6/schlock: tests/accuracy.py BenchmarkCase rows, and in tests/test_*.py the
               literal commands given to validate_command() or a parametrize list of a test function
               that asserts only `not result.allowed` (dangerous) or only `result.allowed` (safe), or
               per row from a should_allow column
  dippy        ldayton/Dippy: tests/**/*.py `TESTS = [(command, True), ...]` → readonly (approved
               without asking); rows with False are not used
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

PROJECTS = {
    "dcg": "Dicklesworthstone/destructive_command_guard",
    "safety-net": "kenryu42/claude-code-safety-net",
    "schlock": "27Bslash6/schlock",
    "dippy": "ldayton/Dippy",
}
Row = dict[str, str]


class Repo:
    """Read files of one clone at HEAD (bare or with a work tree) through git."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _git(self, *args: str) -> str:
        argv = ["git", f"--git-dir={self.path}", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
        return done.stdout

    def files(self, under: str) -> list[str]:
        return self._git("ls-tree", "-r", "--name-only", "HEAD", "--", under).splitlines()

    def read(self, path: str) -> str:
        return self._git("show", f"HEAD:{path}")


def find_repo(base: Path, project: str) -> Repo | None:
    owner, name = project.split("/")
    for cand in (base / f"{owner}+{name}" / "repo", base / f"{owner}+{name}", base / name, base / owner / name):
        for git_dir in (cand / ".git", cand):
            if (git_dir / "HEAD").is_file() and (git_dir / "objects").is_dir():
                return Repo(git_dir)
    return None


def _row(corpus: str, command: str, label: str, source: str, note: str = "") -> Row:
    return {"corpus": corpus, "command": command, "label": label, "source": source, "note": note}


# -- dcg ---------------------------------------------------------------------------------------------
def extract_dcg(repo: Repo) -> Iterator[Row]:
    for path in repo.files("tests/corpus"):
        if not path.endswith(".toml") or path.endswith("/future_packs.toml"):
            continue  # future_packs: rows allowed only because dcg has not written those rules yet
        doc = tomllib.loads(repo.read(path))
        for i, case in enumerate(doc.get("case", [])):
            if case.get("input_kind", "command") != "command" or not isinstance(case.get("command"), str):
                continue
            expected = case.get("expected", case.get("expected_decision"))
            label = {"deny": "dangerous", "allow": "safe"}.get(str(expected))
            if label:
                note = str(case.get("id") or case.get("description") or "")
                yield _row("dcg", case["command"], label, f"{path}#case{i + 1}", note)


# -- claude-code-safety-net ---------------------------------------------------------------------------
_TS_CALL = re.compile(r"assert(Blocked|Allowed)\(\s*(['\"`])((?:\\.|(?!\2)[^\\])*)\2\s*(,[^;]*?)?\);", re.S)
_JS_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\n": ""}


def _js_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _JS_ESC.get(m.group(1), m.group(1)), text, flags=re.S)


def extract_safety_net(repo: Repo) -> Iterator[Row]:
    for path in repo.files("tests"):
        if not path.endswith(".test.ts"):
            continue
        text = repo.read(path)
        for m in _TS_CALL.finditer(text):
            kind, quote, body, rest = m.groups()
            if quote == "`" and "${" in body:
                continue  # built at run time
            line = text.count("\n", 0, m.start()) + 1
            extra = [a.strip() for a in (rest or "").lstrip(",").split(",") if a.strip()]
            cwd = extra[1:2] if kind == "Blocked" else extra[:1]  # assertBlocked(cmd, reason, cwd?)
            note = f"cwd={cwd[0]}" if cwd else ""
            label = "dangerous" if kind == "Blocked" else "safe"
            yield _row("safety-net", _js_unescape(body), label, f"{path}:{line}", note)


# -- schlock -----------------------------------------------------------------------------------------
def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _schlock_accuracy(path: str, tree: ast.AST) -> Iterator[Row]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "BenchmarkCase":
            kw = {k.arg: k.value for k in node.keywords}
            command = _const_str(kw["command"]) if "command" in kw else None
            blocked = kw.get("expected_blocked")
            if command is not None and isinstance(blocked, ast.Constant) and isinstance(blocked.value, bool):
                label = "dangerous" if blocked.value else "safe"
                name = _const_str(kw["name"]) if "name" in kw else ""
                yield _row("schlock", command, label, f"{path}:{node.lineno}", name or "")


_LABEL_COLUMNS = {"should_allow": "safe", "expected_allowed": "safe", "allowed": "safe", "should_block": "dangerous"}


def _function_label(fn: ast.FunctionDef) -> str | None:
    src = ast.unparse(fn)
    deny = len(re.findall(r"assert not result\.allowed\b(?!\s*==)", src))
    allow = len(re.findall(r"assert result\.allowed\b(?!\s*==)", src))
    if deny and not allow:
        return "dangerous"
    if allow and not deny:
        return "safe"
    return None


def _parametrize_rows(fn: ast.FunctionDef) -> Iterator[tuple[str, int, str | None]]:
    """(command, line, label from a should_allow-like column or None) of each parametrize row."""
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize") and len(dec.args) >= 2):
            continue
        names = _const_str(dec.args[0]) or ""
        columns = [n.strip() for n in names.split(",")]
        first = columns[0]
        label_at = next((i for i, n in enumerate(columns) if n in _LABEL_COLUMNS), None)
        if first not in ("command", "cmd"):
            continue
        values = dec.args[1]
        if not isinstance(values, (ast.List, ast.Tuple)):
            continue
        for elt in values.elts:
            if isinstance(elt, ast.Call) and ast.unparse(elt.func).endswith("param") and elt.args:
                elt = elt.args[0] if "," not in names else ast.Tuple(elts=list(elt.args))
            cmd = _const_str(elt.elts[0]) if isinstance(elt, ast.Tuple) and elt.elts else _const_str(elt)
            label = None
            if label_at is not None and isinstance(elt, ast.Tuple) and len(elt.elts) > label_at:
                flag = elt.elts[label_at]
                if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
                    kind = _LABEL_COLUMNS[columns[label_at]]
                    label = kind if flag.value else ("dangerous" if kind == "safe" else "safe")
            if cmd is not None:
                yield cmd, getattr(elt, "lineno", fn.lineno), label


def extract_schlock(repo: Repo) -> Iterator[Row]:
    for path in repo.files("tests"):
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".py"):
            continue
        tree = ast.parse(repo.read(path))
        if name == "accuracy.py":
            yield from _schlock_accuracy(path, tree)
            continue
        if not name.startswith("test_"):
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test"):
                continue
            label = _function_label(fn)
            for cmd, line, row_label in _parametrize_rows(fn):
                if row_label or label:
                    yield _row("schlock", cmd, row_label or str(label), f"{path}:{line}", fn.name)
            if label is None:
                continue
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("validate_command") and call.args:
                    literal = _const_str(call.args[0])
                    if literal is not None:
                        yield _row("schlock", literal, label, f"{path}:{call.lineno}", fn.name)


# -- Dippy -------------------------------------------------------------------------------------------
def extract_dippy(repo: Repo) -> Iterator[Row]:
    for path in repo.files("tests"):
        if not path.endswith(".py"):
            continue
        tree = ast.parse(repo.read(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "TESTS" for t in node.targets)):
                continue
            if not isinstance(node.value, ast.List):
                continue
            for elt in node.value.elts:
                if isinstance(elt, ast.Tuple) and len(elt.elts) == 2:
                    cmd, ok = _const_str(elt.elts[0]), elt.elts[1]
                    if cmd is not None and isinstance(ok, ast.Constant) and ok.value is True:
                        yield _row("dippy", cmd, "readonly", f"{path}:{elt.lineno}")


EXTRACTORS = {"dcg": extract_dcg, "safety-net": extract_safety_net, "schlock": extract_schlock, "dippy": extract_dippy}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", default="/work/.mirror", help="folder holding the four clones")
    parser.add_argument("--out", default="/tmp/guard-corpora", help="folder for <corpus>.jsonl")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    missing = 0
    for corpus, project in PROJECTS.items():
        repo = find_repo(Path(args.repos), project)
        if repo is None:
            print(f"{corpus}: no clone of {project} under {args.repos}", file=sys.stderr)
            missing += 1
            continue
        seen: set[tuple[str, str]] = set()
        rows = []
        for row in EXTRACTORS[corpus](repo):
            key = (row["command"], row["label"])
            if row["command"].strip() and key not in seen:
                seen.add(key)
                rows.append(row)
        (out / f"{corpus}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        counts = {label: sum(r["label"] == label for r in rows) for label in ("dangerous", "safe", "readonly")}
        print(f"{corpus}: {len(rows)} rows " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
