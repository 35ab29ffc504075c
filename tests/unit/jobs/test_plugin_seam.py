"""The typed plug-in seam: entry-point registration, admissions merged with their meta, meta stored with the job."""

from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path

import pytest

from frontdesk.config import Settings
from frontdesk.core.submission import admit, job_columns
from frontdesk.errors import ConfigError
from frontdesk.plugins import (
    BACKEND_PATHS,
    PLUGIN_PATHS,
    Accepts,
    Admission,
    Admits,
    Notice,
    SubmitContext,
    backend_classes,
    load_plugins,
    make_backend,
    plugin_classes,
)
from frontdesk.spec.model import JobSpec
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore

ROOT = Path(__file__).resolve().parents[3]


def _settings(home: Path, backend: str) -> Settings:
    return Settings(home=home, runtime_dir=home / "run", socket=home / "run" / "gw.sock", backend=backend)


def test_the_built_ins_are_registered_as_entry_points() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert project["frontdesk.plugins"] == PLUGIN_PATHS
    assert project["frontdesk.backends"] == BACKEND_PATHS


class Classifier:
    name = "first"

    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission:
        return Admission(notices=[Notice("first", "hello")], job_class="hpc", meta={"seen": ctx.principal})


class Router:
    name = "second"

    def __init__(self) -> None:
        self.accepted: list[int] = []

    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission:
        return Admission(partition="gpu", job_class="training", meta={"pool": "gpu", "n": [1, 2]})

    def on_accepted(self, job: object) -> None:
        self.accepted.append(0)


def test_admissions_merge_in_order_and_the_meta_is_stored_with_the_job(tmp_path: Path) -> None:
    second = Router()
    assert isinstance(second, Admits) and isinstance(second, Accepts) and not isinstance(Classifier(), Accepts)
    spec = JobSpec.model_validate({"command": ["true"]})
    ctx = SubmitContext(principal="alice")
    total = admit([Classifier(), second], spec, ctx)
    assert total.job_class == "training" and total.partition == "gpu"  # later plug-ins win
    assert [n.text for n in total.notices] == ["hello"]
    store = JobStore(open_db(tmp_path / "db.sqlite"))
    job_id = store.insert_job(**job_columns(spec, ctx, [], total, {"cwd": "/"}, time.time()), backend="local")
    rec = store.get(job_id)
    assert rec is not None
    assert rec.meta("first") == {"seen": "alice"}
    assert rec.meta("second") == {"pool": "gpu", "n": [1, 2]}
    assert rec.meta("absent") == {}


def test_a_site_package_adds_a_plugin_and_a_backend_by_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "site_ext-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: site-ext\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[frontdesk.plugins]\nsitex = site_ext:SitePlugin\n\n[frontdesk.backends]\nsiteb = site_ext:SiteBackend\n"
    )
    (tmp_path / "site_ext.py").write_text(
        "class SitePlugin:\n"
        "    name = 'sitex'\n"
        "    def __init__(self, settings):\n"
        "        self.settings = settings\n"
        "class SiteBackend:\n"
        "    name = 'siteb'\n"
        "    def __init__(self, settings):\n"
        "        self.settings = settings\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FRONTDESK_PLUGINS", "sitex")
    assert list(plugin_classes())[: len(PLUGIN_PATHS)] == list(PLUGIN_PATHS)  # built-ins first, in order
    assert plugin_classes()["sitex"] == "site_ext:SitePlugin"
    settings = _settings(tmp_path / "home", "siteb")
    plugins = load_plugins(settings)
    assert [p.name for p in plugins] == ["sitex"]
    assert backend_classes()["siteb"] == "site_ext:SiteBackend"
    assert make_backend(settings).name == "siteb"
    sys.modules.pop("site_ext", None)


def test_an_unknown_backend_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no backend 'nope'"):
        make_backend(_settings(tmp_path, "nope"))
