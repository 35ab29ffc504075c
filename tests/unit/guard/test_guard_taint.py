"""Taint: fetched content is recorded with its source; running or installing it asks and names the source."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from frontdesk.guard.checker import check
from frontdesk.guard.context import read_text_file
from frontdesk.guard.model import Decision, GuardContext
from frontdesk.guard.taint import TaintStore


def _ctx(store: TaintStore, cwd: Path) -> GuardContext:
    return GuardContext(
        env={"HOME": str(cwd)},
        cwd=str(cwd),
        home=str(cwd),
        tainted=store.source_of,
        taint_text=store.text_source,
        read_file=read_text_file,
    )


def test_fetches_are_reported_for_each_downloader(tmp_path: Path) -> None:
    ctx = GuardContext(env={}, cwd=str(tmp_path))
    cases = {
        "git clone https://github.com/x/tool.git": (tmp_path / "tool", "https://github.com/x/tool.git"),
        "git clone --depth 1 https://github.com/x/tool vendored": (
            tmp_path / "vendored",
            "https://github.com/x/tool",
        ),
        "curl -fsSL -o inst.sh https://get.x.org/i.sh": (tmp_path / "inst.sh", "https://get.x.org/i.sh"),
        "wget https://x.org/a/setup.sh": (tmp_path / "setup.sh", "https://x.org/a/setup.sh"),
        "wget -O run.sh https://x.org/r": (tmp_path / "run.sh", "https://x.org/r"),
        "curl https://x.org/s > s.sh": (tmp_path / "s.sh", "https://x.org/s"),
    }
    for command, (path, source) in cases.items():
        assert (str(path), source) in check(command, ctx).fetches, command
    pip = check("pip download -d wheels somepkg", ctx).fetches
    assert pip and pip[0][0] == str(tmp_path / "wheels") and "somepkg" in pip[0][1]


def test_running_installing_or_sourcing_tainted_content_asks(tmp_path: Path) -> None:
    store = TaintStore.open(tmp_path / "home")
    repo = tmp_path / "tool"
    repo.mkdir()
    (repo / "install.sh").write_text("#!/bin/sh\necho hi\n")
    store.record(str(repo), "https://github.com/x/tool", "git clone https://github.com/x/tool")
    store.save()
    store = TaintStore.open(tmp_path / "home")  # reload from disk
    ctx = _ctx(store, tmp_path)
    for command in (
        "bash tool/install.sh",
        "./tool/install.sh",
        "source tool/install.sh",
        "pip install -e tool",
        "cd tool && pip install .",
        "cd tool && make install",
    ):
        verdict = check(command, ctx)
        assert verdict.decision is Decision.ASK and verdict.rule == "taint.exec", command
        assert "https://github.com/x/tool" in verdict.reason and verdict.taint_source == "https://github.com/x/tool"
    assert check("bash my_own.sh", ctx).decision is Decision.ALLOW
    assert check("less tool/install.sh", ctx).decision is Decision.ALLOW


def test_a_dangerous_script_in_a_clone_is_denied_and_traced(tmp_path: Path) -> None:
    store = TaintStore.open(tmp_path / "home")
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool" / "install.sh").write_text("#!/bin/bash\nrm -rf ~/\n")
    store.record(str(tmp_path / "tool"), "https://evil.example/tool")
    verdict = check("bash tool/install.sh", _ctx(store, tmp_path))
    assert verdict.decision is Decision.DENY and verdict.rule == "fs.rm-root"
    assert "install.sh" in verdict.reason and "https://evil.example/tool" in verdict.reason


def test_commands_copied_from_a_fetched_readme_are_traced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "proj"
    store = TaintStore.open(home)
    store.record(str(repo), "https://github.com/x/proj")
    store.save()
    repo.mkdir()
    (repo / "README.md").write_text(
        "# Proj\n\nInstall:\n\n    $ sudo make install-everything\n\nThen `chmod 777 /opt/proj`.\n"
    )
    store = TaintStore.open(home)  # indexes the docs that have arrived since
    ctx = _ctx(store, tmp_path)
    verdict = check("sudo make install-everything", ctx)
    assert verdict.taint_source and "README.md" in verdict.taint_source and "github.com/x/proj" in verdict.taint_source
    assert "README.md" in verdict.reason
    assert check("chmod 777 /opt/proj", ctx).taint_source
    assert check("ls -la", ctx).taint_source is None


def test_store_survives_a_corrupt_file(tmp_path: Path) -> None:
    (tmp_path / "guard").mkdir()
    (tmp_path / "guard" / "taint.json").write_text("{not json")
    store = TaintStore.open(tmp_path)
    assert store.source_of("/anything") is None
    store.record("/x", "https://s")
    store.save()
    assert TaintStore.open(tmp_path).source_of("/x/y/z") == "https://s"


def test_replace_keeps_context_plain_data(tmp_path: Path) -> None:
    ctx = replace(GuardContext(), cwd=str(tmp_path))
    assert check("ls", ctx).decision is Decision.ALLOW
