"""Load the labelled guard corpus and the fixed context it is checked in (shared by tests and bench)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from frontdesk.guard.model import GuardContext, NodeRole, Partition

HERE = Path(__file__).parent
HOME = "/home/alice"
CWD = "/home/alice/project"
ENV = {
    "HOME": HOME,
    "USER": "alice",
    "PATH": "/usr/bin:/bin",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "SCRATCH": "/scratch/alice",
}
TAINTED = {
    f"{CWD}/vendor/tool": "https://github.com/unknown/tool",
    f"{HOME}/Downloads/install.sh": "https://get.example.com",
}


@dataclass(frozen=True)
class Case:
    """One labelled command."""

    command: str
    dangerous: bool
    rule: str | None
    role: NodeRole
    line: int
    gpus: bool = False


def load_corpus(path: Path = HERE / "corpus.txt") -> list[Case]:
    """Every case in the corpus file."""
    cases: list[Case] = []
    section: str | None = None
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        mark, _, rest = line.partition(" ")
        role = NodeRole.WORKSTATION
        gpus = False
        while rest.startswith("@"):
            tag, _, rest = rest.partition(" ")
            if tag == "@gpus":
                gpus = True
            else:
                role = NodeRole(tag[1:])
        command = rest.replace("⏎", "\n")
        cases.append(Case(command, mark == "!", section if mark == "!" else None, role, n, gpus))
    return cases


# Live processes the corpus context knows about: a job of another session, another user's process.
PROCESSES = {70001: "pid 70001 runs frontdesk job j-17", 70002: "pid 70002 belongs to bob"}


def _read_fixture(path: str) -> str | None:
    if path.startswith(CWD + "/"):
        local = HERE / "scripts" / path[len(CWD) + 1 :]
        if local.is_file():
            return local.read_text()
    return None


def _tainted(path: str) -> str | None:
    path = os.path.normpath(path)
    for root, source in TAINTED.items():
        if path == root or path.startswith(root + "/"):
            return source
    return None


def corpus_context(role: NodeRole = NodeRole.WORKSTATION, gpus: bool = False) -> GuardContext:
    """The fixed context every corpus case is checked in (`gpus`: frontdesk hands out this machine's GPUs)."""
    return GuardContext(
        node_role=role,
        gpus_managed=gpus,
        env=dict(ENV),
        cwd=CWD,
        home=HOME,
        scratch_roots=("/scratch", "/scratch/alice"),
        home_roots=("/home",),
        shared_paths=("/project/shared", "/datasets"),
        partitions={"debug": Partition("debug", "test", 1800, 2), "gpu": Partition("gpu", "production")},
        tainted=_tainted,
        read_file=_read_fixture,
        process_info=PROCESSES.get,
    )
