"""A gateway SIGKILLed after storing a submission but before answering it: the client (CLI, sbatch shim, MCP)
sends the same request again, with its request id, once a gateway answers, and is told the job it made. No second
job, the job runs once, and the submitter hears its id (before: exit 69 while the job ran, so an agent retrying
by hand made a second one)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from fault_helpers import until

from frontdesk.client import Client
from frontdesk.errors import SpecError


def test_a_submission_whose_gateway_died_before_answering_gets_its_one_job(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": "after_job_stored"})
    runs = tmp_path / "runs"
    env = {k: v for k, v in gw.env.items() if k != "FRONTDESK_FAULT"}
    argv = [sys.executable, "-m", "frontdesk.cli.main", "run", "--json", "--", "sh", "-c", f"echo ran >> '{runs}'"]
    cli = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die after storing the job")
    assert gw.proc.returncode == -9
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()  # within the client's resend window
    out, err = cli.communicate(timeout=90)
    assert cli.returncode == 0, err
    told = json.loads(out)
    jobs = gw.client.jobs()
    assert [j["id"] for j in jobs] == [told["id"]], jobs  # one job, and it is the one the submitter was told
    gw.wait_state(told["id"], {"COMPLETED"}, timeout=60)
    assert runs.read_text() == "ran\n"


def test_a_gateway_never_reached_fails_at_once_and_a_bad_request_id_is_refused(gateway_factory: Any) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    nobody = Client(socket_path=gw.home / "run" / "none.sock", timeout=5, autostart=False)
    done = threading.Event()

    def submit() -> None:
        try:
            nobody.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})
        except Exception:  # noqa: BLE001 - only that it returns promptly matters here
            done.set()

    threading.Thread(target=submit, daemon=True).start()
    assert done.wait(20), "a gateway that was never reached was retried"  # retries last RESEND_FOR_S (30 s)
    for bad in ("short", "x" * 65, "with space!", 42):
        try:
            gw.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp", "request_id": bad})
        except SpecError as exc:
            assert "context.request_id" in exc.message
        else:
            raise AssertionError(f"request_id {bad!r} was taken")
    one = gw.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp", "request_id": "fixed-id-123"})
    again = gw.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp", "request_id": "fixed-id-123"})
    assert again["id"] == one["id"] and again.get("duplicate") is True
