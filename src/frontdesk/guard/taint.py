"""The taint store: which paths hold content fetched from outside, and from where.

A small JSON file under `$FRONTDESK_HOME/guard/taint.json`, written atomically (tempfile + rename) because
every shell call of an agent may run a fresh `frontdesk guard hook`. `record` is called for what a command
is about to fetch (git clone, curl -o, wget, pip download); later, once the content exists, the lines of its
README-like files are indexed by hash so that a command copied from a fetched README is traced to it.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TaintStore", "normalise_line", "JOB_OUTPUT", "store_home"]

JOB_OUTPUT = "output of frontdesk job"
"""The `where` prefix of lines that came from a job report's excerpt (agents/plugin.py records them)."""

_DOC_NAME = r"(?i)^(readme|install|setup|getting[_-]?started|quickstart|usage)[^/]*$|\.(md|rst|txt)$"
_MAX_DOCS = 40
_MAX_DOC_BYTES = 256 * 1024
_MAX_ENTRIES = 2000


def normalise_line(line: str) -> str:
    """A command line as written in docs: prompt, backticks and extra blanks removed."""
    line = line.strip().strip("`").strip()
    line = re.sub(r"^(\$|>|#|%)\s+", "", line)
    return " ".join(line.split())


def store_home(home: str | Path, principal: str) -> Path:
    """The home whose store indexes `principal`'s job output, on the gateway: its own home for its own user (the
    file that user's hooks read), `guard/users/NAME` under it for any other. A facility gateway serves every
    user: one index for all traced bob's commands to alice's job output and named her job in his answer."""
    import pwd

    try:
        own = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        own = None
    if principal == own:
        return Path(home)
    name = principal if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}", principal) else "_" + _hash(principal)
    return Path(home) / "guard" / "users" / name


def _hash(text: str) -> str:
    import hashlib  # here: a hook that finds no tainted docs never needs it

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class TaintStore:
    """Tainted roots (path → source) and hashes of lines found in fetched docs (hash → where)."""

    path: Path
    paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, home: str | Path) -> TaintStore:
        """Load the store under `home` (empty when missing or unreadable); index newly arrived docs."""
        path = Path(home) / "guard" / "taint.json"
        store = cls(path)
        try:
            data = json.loads(path.read_text())
            store.paths = dict(data.get("paths", {}))
            store.lines = dict(data.get("lines", {}))
        except (OSError, ValueError):
            return store
        if any(not entry.get("indexed") for entry in store.paths.values()):
            if store._index_new():
                store.save()
        return store

    def save(self) -> None:
        """Write atomically; a failure to write is not fatal to a check."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            import tempfile  # not at import: tempfile pulls in shutil, random

            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".taint.")
            with os.fdopen(fd, "w") as fh:
                json.dump({"paths": self.paths, "lines": self.lines}, fh)
            os.replace(tmp, self.path)
        except OSError:
            pass

    def record(self, target: str, source: str, command: str = "", now: float | None = None) -> None:
        """Mark `target` (a file or a directory about to be written) as coming from `source`."""
        self.paths[os.path.normpath(target)] = {
            "source": source,
            "ts": now or time.time(),
            "command": command[:200],
            "indexed": False,
        }
        if len(self.paths) > _MAX_ENTRIES:
            for key in sorted(self.paths, key=lambda k: self.paths[k].get("ts", 0))[: len(self.paths) - _MAX_ENTRIES]:
                del self.paths[key]

    def source_of(self, path: str) -> str | None:
        """The source of the tainted root `path` lies under, if any."""
        path = os.path.normpath(path)
        probe = path
        while True:
            entry = self.paths.get(probe)
            if entry is not None:
                return str(entry["source"])
            parent = os.path.dirname(probe)
            if parent == probe:
                return None
            probe = parent

    def text_source(self, command: str) -> str | None:
        """Where a command's text (or one of its lines) was seen in fetched docs, if anywhere."""
        if not self.lines:
            return None
        for line in [command, *command.splitlines()]:
            norm = normalise_line(line)
            if norm and (hit := self.lines.get(_hash(norm))):
                return hit
        return None

    def record_text(self, lines: Iterable[str], where: str) -> int:
        """Index lines of untrusted text that reached an agent under `where` (issue 19: report excerpts).

        Each line is indexed whole, each `code span` in it, and what follows its last `: ` (so a command
        copied out of "now run: CMD" traces too). A later command with that text is traced to `where`.
        """
        n = 0
        for line in lines:
            tail = re.split(r":\s+", line)[-1]
            for cand in (line, tail, *re.findall(r"`([^`\n]{6,400})`", line)):
                norm = normalise_line(cand)
                if 6 <= len(norm) <= 400:
                    self.lines[_hash(norm)] = where
                    n += 1
        return n

    def _index_new(self) -> bool:
        changed = False
        for root, entry in self.paths.items():
            if entry.get("indexed") or not os.path.exists(root):
                continue
            for doc in _docs_under(root):
                try:
                    text = Path(doc).read_text(errors="replace")[:_MAX_DOC_BYTES]
                except OSError:
                    continue
                where = f"{doc} (from {entry['source']})"
                for line in [*text.splitlines(), *re.findall(r"`([^`\n]{6,400})`", text)]:
                    norm = normalise_line(line)
                    if 6 <= len(norm) <= 400:
                        self.lines.setdefault(_hash(norm), where)
            entry["indexed"] = True
            changed = True
        return changed


def _docs_under(root: str) -> list[str]:
    if os.path.isfile(root):
        return [root] if re.search(_DOC_NAME, os.path.basename(root)) else []
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        if dirpath.count(os.sep) - root.count(os.sep) > 2:
            dirnames[:] = []
        for name in sorted(filenames):
            if re.search(_DOC_NAME, name):
                found.append(os.path.join(dirpath, name))
                if len(found) >= _MAX_DOCS:
                    return found
    return found
