"""The core on the embedded backend, through a real gateway process and the real CLI."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from frontdesk.errors import Conflict, NotFound, SpecError

PY = sys.executable


def test_run_wait_prints_report_with_output(gateway, workdir: Path) -> None:
    r = gateway.cli(
        "run",
        "--name",
        "hello",
        "--mem",
        "64M",
        "--time",
        "1m",
        "--wait",
        "--",
        PY,
        "-c",
        "import os; print('hello from', os.getcwd())",
        cwd=workdir,
    )
    assert r.returncode == 0, r.stderr
    assert "frontdesk job 1 (hello): COMPLETED" in r.stdout
    assert f"hello from {workdir}" in r.stdout
    assert r.stderr == ""


def test_submit_yaml_and_json_report(gateway, workdir: Path) -> None:
    spec = workdir / "job.yaml"
    spec.write_text(f'name: yaml-job\ncommand: [{PY}, -c, "print(6*7)"]\nresources: {{cpus: 1, memory: 64M}}\n')
    r = gateway.cli("submit", str(spec), "--json", cwd=workdir)
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)
    assert job["name"] == "yaml-job" and job["spec"]["resources"]["memory"] == 64 * 1024**2
    r = gateway.cli("wait", str(job["id"]), "--json")
    res = json.loads(r.stdout)
    assert res["done"] and res["reports"][0]["stdout_tail"] == ["42"]
    jspec = workdir / "job.json"
    jspec.write_text(json.dumps({"command": [PY, "-c", "print('json')"], "name": "json-job"}))
    r = gateway.cli("submit", str(jspec), "--wait", "--json", cwd=workdir)
    assert json.loads(r.stdout)["reports"][0]["state"] == "COMPLETED"


def test_memory_over_limit_ends_out_of_memory(gateway, workdir: Path) -> None:
    r = gateway.cli(
        "run",
        "--mem",
        "100M",
        "--time",
        "1m",
        "--wait",
        "--json",
        "--",
        PY,
        "-c",
        "import time; x = bytearray(400 * 1024 * 1024); time.sleep(10)",
        cwd=workdir,
    )
    res = json.loads(r.stdout)
    rep = res["reports"][0]
    assert rep["state"] == "OUT_OF_MEMORY"
    assert rep["classification"]["kind"] == "host_oom"
    assert "--mem" in rep["classification"]["next_step"]
    assert rep["used"]["peak_rss_bytes"] >= 90 * 1024**2
    assert r.returncode == 1


def test_walltime_ends_timeout_and_kills_tree(gateway, workdir: Path) -> None:
    marker = workdir / "child.pid"
    cmd = f"sleep 300 & echo $! > {shlex.quote(str(marker))}; wait"
    r = gateway.cli("run", "--time", "2s", "--wait", "--json", "--", "/bin/sh", "-c", cmd, cwd=workdir)
    rep = json.loads(r.stdout)["reports"][0]
    assert rep["state"] == "TIMEOUT"
    assert rep["classification"]["kind"] == "walltime"
    assert 1.5 <= rep["run_s"] < 8
    child = int(marker.read_text())
    assert not _alive(child), "the job's background child survived the timeout"


def test_dependency_chain_and_failed_dependency(gateway, workdir: Path) -> None:
    c = gateway.client
    out = workdir / "order.txt"
    q = shlex.quote(str(out))
    a = c.submit(
        spec={"name": "a", "command": ["/bin/sh", "-c", f"sleep 0.5; echo a >> {q}"]}, context={"cwd": str(workdir)}
    )
    b = c.submit(
        spec={"name": "b", "depends_on": ["a"], "command": ["/bin/sh", "-c", f"echo b >> {q}"]},
        context={"cwd": str(workdir)},
    )
    cc = c.submit(
        spec={"name": "c", "depends_on": [b["id"]], "command": ["/bin/sh", "-c", f"echo c >> {q}"]},
        context={"cwd": str(workdir)},
    )
    assert b["state"] == "PENDING" and b["reason"] == "Dependency"
    res = c.wait([cc["id"]], "all", 60)
    assert res["reports"][0]["state"] == "COMPLETED"
    assert out.read_text().split() == ["a", "b", "c"]
    assert c.job(a["id"])["ended_at"] <= c.job(b["id"])["started_at"]

    bad = c.submit(spec={"name": "bad", "command": ["/bin/sh", "-c", "exit 3"]}, context={"cwd": str(workdir)})
    never = c.submit(spec={"depends_on": [bad["id"]], "command": ["true"]}, context={"cwd": str(workdir)})
    cont = c.submit(
        spec={"depends_on": [bad["id"]], "fail_action": "continue", "command": ["true"]}, context={"cwd": str(workdir)}
    )
    res = c.wait([never["id"], cont["id"]], "all", 60)
    states = {r["job_id"]: r["state"] for r in res["reports"]}
    assert states[never["id"]] == "DEPENDENCY_NEVER_SATISFIED"
    assert states[cont["id"]] == "COMPLETED"
    assert c.report(bad["id"])["exit_code"] == 3


def test_dependency_timeout(gateway, workdir: Path) -> None:
    c = gateway.client
    slow = c.submit(spec={"command": ["sleep", "30"]}, context={"cwd": str(workdir)})
    dep = c.submit(
        spec={"command": ["true"], "depends_on": [slow["id"]], "dependency_timeout": "1s"},
        context={"cwd": str(workdir)},
    )
    rep = c.wait([dep["id"]], "all", 30)["reports"][0]
    assert rep["state"] == "DEPENDENCY_NEVER_SATISFIED"
    assert "within" in rep["classification"]["summary"]
    c.cancel(slow["id"])


def test_retry_then_success(gateway, workdir: Path) -> None:
    cmd = "if [ -e once ]; then echo second; else touch once; echo boom >&2; exit 4; fi"
    job = gateway.client.submit(
        spec={"command": ["/bin/sh", "-c", cmd], "retry": {"count": 2, "on": ["FAILED"]}}, context={"cwd": str(workdir)}
    )
    rep = gateway.client.wait([job["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "COMPLETED" and rep["attempts"] == 2
    kinds = [e["kind"] for e in gateway.client.events(job=job["id"])]
    assert kinds.count("job.retry") == 1 and kinds[-1] == "job.report"


def test_retry_exhausted_keeps_last_failure(gateway, workdir: Path) -> None:
    job = gateway.client.submit(
        spec={"command": ["/bin/sh", "-c", "echo nope >&2; exit 2"], "retry": {"count": 1}},
        context={"cwd": str(workdir)},
    )
    rep = gateway.client.wait([job["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "FAILED" and rep["attempts"] == 2 and rep["exit_code"] == 2
    assert "nope" in rep["classification"]["summary"]


def test_cancel_running_kills_process_tree(gateway, workdir: Path) -> None:
    marker = workdir / "pids"
    cmd = f"sleep 300 & echo $! >> {shlex.quote(str(marker))}; sleep 300 & echo $! >> {shlex.quote(str(marker))}; wait"
    job = gateway.client.submit(spec={"command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})
    gateway.wait_state(job["id"], {"RUNNING"})
    deadline = time.monotonic() + 60
    while (not marker.exists() or len(marker.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    r = gateway.cli("cancel", str(job["id"]))
    assert r.returncode == 0, r.stderr
    rep = gateway.client.wait([job["id"]], "all", 30)["reports"][0]
    assert rep["state"] == "CANCELLED"
    for pid in map(int, marker.read_text().split()):
        assert not _alive(pid)
    again = gateway.cli("cancel", str(job["id"]))
    assert again.returncode == Conflict.exit_code
    assert "already ended" in again.stderr and "Traceback" not in again.stderr


def test_cancel_pending_dependent(gateway, workdir: Path) -> None:
    c = gateway.client
    first = c.submit(spec={"command": ["sleep", "30"]}, context={"cwd": str(workdir)})
    second = c.submit(spec={"command": ["true"], "depends_on": [first["id"]]}, context={"cwd": str(workdir)})
    c.cancel(second["id"])
    assert c.report(second["id"])["state"] == "CANCELLED"
    c.cancel(first["id"])
    assert c.wait([first["id"]], "all", 30)["reports"][0]["state"] == "CANCELLED"


def test_resources_are_never_shared(gateway_factory, workdir: Path) -> None:
    gw = gateway_factory(config='[local]\ncpus = 1\nmemory = "1G"\n')
    c = gw.client
    log = workdir / "spans"
    q = shlex.quote(str(log))
    cmd = f"echo start $(date +%s.%N) >> {q}; sleep 0.6; echo end $(date +%s.%N) >> {q}"
    ids = [c.submit(spec={"command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})["id"] for _ in range(3)]
    assert c.job(ids[1])["state"] == "PENDING"
    c.wait(ids, "all", 60)
    spans = [float(line.split()[1]) for line in log.read_text().splitlines()]
    starts_ends = list(zip(spans[0::2], spans[1::2], strict=True))
    for (_, end), (start, _) in zip(starts_ends, starts_ends[1:], strict=False):
        assert start >= end, "two 1-CPU jobs overlapped on a 1-CPU inventory"
    big = c.submit(spec={"command": ["true"], "resources": {"memory": "2G"}}, context={"cwd": str(workdir)})
    # can never fit: refused at once (issue 12 item 9), never started on an oversubscribed host nor PENDING forever
    ended = gw.wait_state(big["id"], {"FAILED", "COMPLETED", "RUNNING"})
    assert ended["state"] == "FAILED" and "can never run here" in ended["reason"]


def test_gpus_handed_over_by_cuda_visible_devices(gateway_factory, workdir: Path) -> None:
    gw = gateway_factory(config="[local]\ngpus = 2\n")
    c = gw.client
    cmd = [PY, "-c", "import os, time; print('gpus', os.environ['CUDA_VISIBLE_DEVICES']); time.sleep(0.5)"]
    ids = [
        c.submit(spec={"command": cmd, "resources": {"gpus": 1}}, context={"cwd": str(workdir)})["id"] for _ in range(2)
    ]
    third = c.submit(spec={"command": cmd, "resources": {"gpus": 2}}, context={"cwd": str(workdir)})["id"]
    reps = {r["job_id"]: r for r in c.wait([*ids, third], "all", 60)["reports"]}
    seen = {reps[i]["stdout_tail"][0] for i in ids}
    assert seen == {"gpus 0", "gpus 1"}
    assert reps[third]["stdout_tail"] == ["gpus 0,1"]


def test_idempotency_key_returns_first_job(gateway, workdir: Path) -> None:
    counter = workdir / "runs"
    spec = {"command": ["/bin/sh", "-c", f"echo run >> {shlex.quote(str(counter))}"], "idempotency_key": "exp-42"}
    first = gateway.client.submit(spec=spec, context={"cwd": str(workdir)})
    second = gateway.client.submit(spec=spec, context={"cwd": str(workdir)})
    assert second["id"] == first["id"] and second.get("duplicate")
    gateway.client.wait([first["id"]], "all", 30)
    assert counter.read_text().split() == ["run"]


def test_bad_spec_is_refused_with_field_path_and_nothing_stored(gateway, workdir: Path) -> None:
    bad = workdir / "bad.yaml"
    bad.write_text("command: [python, x.py]\nresources:\n  memory: lots\n")
    r = gateway.cli("submit", str(bad))
    assert r.returncode == SpecError.exit_code
    assert r.stderr.count("\n") == 1 and "resources.memory" in r.stderr and "lots" in r.stderr
    bad.write_text("command: [x]\nretry: {count: 1, on: [EXPLODED]}\n")
    r = gateway.cli("submit", str(bad))
    assert r.returncode == 2 and "retry.on" in r.stderr
    bad.write_text("name: x\n")
    r = gateway.cli("submit", str(bad))
    assert r.returncode == 2 and "command" in r.stderr
    bad.write_text(": : [\n")
    r = gateway.cli("submit", str(bad))
    assert r.returncode == 2 and "cannot parse" in r.stderr
    r = gateway.cli("run", "--mem", "8X", "--", "true")
    assert r.returncode == 2 and "resources.memory" in r.stderr
    r = gateway.cli("run", "--after", "nosuchjob", "--", "true")
    assert r.returncode == 2 and "depends_on" in r.stderr
    assert gateway.client.jobs() == []


def test_cli_errors_are_one_line(gateway, tmp_path: Path) -> None:
    r = gateway.cli("status", "999")
    assert r.returncode == NotFound.exit_code and r.stderr.strip() == "frontdesk: no job 999"
    r = gateway.cli("report", "abc")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = gateway.cli("status", env={"FRONTDESK_SOCKET": str(tmp_path / "nope.sock")})
    assert r.returncode == 69 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = gateway.cli("run", "--json", "--")
    assert r.returncode == 2
    r = gateway.cli("frobnicate")
    assert r.returncode == 2


def test_wait_timeout_exit_124(gateway, workdir: Path) -> None:
    job = gateway.client.submit(spec={"command": ["sleep", "30"]}, context={"cwd": str(workdir)})
    r = gateway.cli("wait", str(job["id"]), "--timeout", "0.5")
    assert r.returncode == 124 and "still running" in r.stderr
    gateway.client.cancel(job["id"])


def test_wait_any_returns_first(gateway, workdir: Path) -> None:
    c = gateway.client
    slow = c.submit(spec={"command": ["sleep", "30"]}, context={"cwd": str(workdir)})
    fast = c.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})
    res = c.wait([slow["id"], fast["id"]], "any", 30)
    assert res["done"] and [r["job_id"] for r in res["reports"]] == [fast["id"]]
    assert res["pending"] == [slow["id"]]
    c.cancel(slow["id"])


def test_a_job_named_twice_in_a_wait_is_one_job(gateway, workdir: Path) -> None:
    """`wait 5 5` ends when job 5 does, with its one report (it used to wait for a second report forever)."""
    job = gateway.client.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})
    r = gateway.cli("wait", str(job["id"]), str(job["id"]), "--json", "--timeout", "60")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["done"] and [x["job_id"] for x in res["reports"]] == [job["id"]] and res["pending"] == []


def test_logs_tail_and_secret_redaction(gateway, workdir: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    cmd = f"for i in $(seq 1 30); do echo line $i; done; echo using token {token}; echo err >&2"
    job = gateway.client.submit(spec={"command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})
    rep = gateway.client.wait([job["id"]], "all", 30)["reports"][0]
    assert token not in json.dumps(rep)
    assert "redacted" in rep["text"]
    r = gateway.cli("logs", str(job["id"]), "--tail", "3")
    assert r.stdout.splitlines()[:2] == ["line 29", "line 30"] and token not in r.stdout
    r = gateway.cli("logs", str(job["id"]), "--stderr", "--json")
    assert json.loads(r.stdout)["lines"] == ["err"]
    assert len(rep["text"].encode()) <= 2048


def test_report_is_short_even_for_huge_output(gateway, workdir: Path) -> None:
    cmd = [PY, "-c", "import sys\nfor i in range(20000): print('x' * 300, i)\nsys.exit(1)"]
    job = gateway.client.submit(spec={"command": cmd}, context={"cwd": str(workdir)})
    rep = gateway.client.wait([job["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "FAILED" and len(rep["text"].encode()) <= 2048
    assert "19999" in rep["text"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _plugins(monkeypatch) -> None:
    # the real configuration (every plug-in) unless FRONTDESK_TEST_PLUGINS narrows it, e.g. to "none"
    if "FRONTDESK_TEST_PLUGINS" in os.environ:
        monkeypatch.setenv("FRONTDESK_PLUGINS", os.environ["FRONTDESK_TEST_PLUGINS"])
    else:
        monkeypatch.delenv("FRONTDESK_PLUGINS", raising=False)


def test_landlock_limits_writes_to_workdir_and_temp(gateway_factory, workdir: Path, request) -> None:
    import shutil
    import tempfile

    from frontdesk.guard.landlock import landlock_abi

    if landlock_abi() <= 0:
        pytest.skip("landlock not available on this kernel")
    outside = Path(tempfile.mkdtemp(prefix="fd-landlock-", dir=Path.home()))  # not under /tmp
    request.addfinalizer(lambda: shutil.rmtree(outside, ignore_errors=True))
    gw = gateway_factory(config="[local]\nlandlock = true\n")
    q = shlex.quote
    cmd = f"echo ok > inside.txt && echo tmp > /tmp/fd-ll-$$ && rm /tmp/fd-ll-$$ && echo no > {q(str(outside))}/x"
    rep = gw.client.wait(
        [gw.client.submit(spec={"command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})["id"]], "all", 60
    )["reports"][0]
    assert rep["state"] == "FAILED"
    assert (workdir / "inside.txt").read_text() == "ok\n"
    assert not (outside / "x").exists()
    assert any("Permission denied" in line for line in rep["stderr_tail"])
    assert any("landlock ABI" in line for line in rep["stderr_tail"])
