"""Job end → a user's gateway knows it, on the Slurm lab: through the facility gateway's subscription against the
deprecated direct registration (`frontdesk notify --targets-dir`), side by side in one run (issue 13).

Run (as root, lab up): eval "$(scripts/slurm-lab env)"; .venv/bin/python bench/facility_push.py [--jobs 20]
Three gateways: a facility gateway (root, mode facility) registered in the lab's targets dir; gateway A (mode
user, tick 600 s) under a site config naming the facility, so it subscribes; gateway B (mode user, tick 600 s,
no site config) registered in the targets dir itself. Each round submits one job to A and one to B; each job
writes its last moment (time.time()) into a file and exits; the latency is the gateway's stored COMPLETED
event's time minus that moment (same host clock). Prints p50/p95/max in ms for each path and the ratio of p50s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.client import Client  # noqa: E402
from frontdesk.errors import FrontdeskError  # noqa: E402

LAB = Path(os.environ.get("FRONTDESK_SLURM_LAB", "/var/lib/frontdesk-slurm-lab"))
JOB = "import time; time.sleep({sleep}); open({path!r}, 'w').write(repr(time.time()))"


def _serve(home: Path, socket: Path, **env: str) -> subprocess.Popen[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    base.update(FRONTDESK_HOME=str(home), FRONTDESK_SOCKET=str(socket), FRONTDESK_SLURM_LAB=str(LAB), **env)
    home.mkdir(parents=True, exist_ok=True)
    log = open(home / "gateway.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "frontdesk.cli.main", "serve", "--log-level", "info"],
        env=base,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            Client(socket_path=socket, timeout=5).health()
            return proc
        except FrontdeskError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    f"gateway in {home} did not start:\n{(home / 'gateway.log').read_text()[-2000:]}"
                ) from None
            time.sleep(0.1)


def _submit(client: Client, out: Path, sleep: float) -> int:
    spec = {"command": [sys.executable, "-c", JOB.format(sleep=sleep, path=str(out))], "name": "fdpush-bench"}
    job: dict[str, Any] = client.request("POST", "/v1/jobs", {"spec": spec, "context": {"cwd": "/tmp"}})
    return int(job["id"])


def _known_at(client: Client, job_id: int) -> float | None:
    """When the gateway stored the job's end; None when no push came within 30 s (the epilog's was lost)."""
    done = client.request("POST", "/v1/wait", {"ids": [job_id], "timeout": 30})
    if not done["done"]:
        bid = client.job(job_id)["backend_id"]
        print(f"lost: job {job_id} (Slurm {bid}) at {client.socket_path}", file=sys.stderr)
        client.request("POST", "/v1/notify", {"backend": "slurm", "ids": [str(bid)]})  # root may: move on
        client.request("POST", "/v1/wait", {"ids": [job_id], "timeout": 60})
        return None
    for event in reversed(client.request("GET", f"/v1/events?job={job_id}&kind=job.state")):
        if event["data"].get("state") == "COMPLETED":
            return float(event["ts"])
    raise SystemExit(f"job {job_id} did not complete: {client.job(job_id)}")


def _row(name: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=20)
    return (
        f"{name:<34} p50 {statistics.median(ms):7.1f} ms   p95 {q[18]:7.1f} ms   max {max(ms):7.1f} ms   (n={len(ms)})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--sleep", type=float, default=0.5)
    args = ap.parse_args()
    if os.geteuid() != 0 or not os.environ.get("SLURM_CONF"):
        raise SystemExit('run as root with the lab\'s SLURM_CONF (eval "$(scripts/slurm-lab env)")')
    d = Path(tempfile.mkdtemp(prefix="fdpb-", dir="/tmp"))
    site = d / "site.toml"
    fsock = d / "f" / "run" / "gateway.sock"
    site.write_text(f'[gateway]\nmode = "facility"\nsocket = "{fsock}"\nbackend = "slurm"\nplugins = ["slurm"]\n')
    procs = []
    try:
        procs.append(_serve(d / "f", fsock, FRONTDESK_SITE_CONFIG=str(site)))
        slow = {"FRONTDESK_MODE": "user", "FRONTDESK_BACKEND": "slurm", "FRONTDESK_TICK": "600"}
        procs.append(_serve(d / "a", d / "a" / "gw.sock", FRONTDESK_SITE_CONFIG=str(site), **slow))
        procs.append(_serve(d / "b", d / "b" / "gw.sock", FRONTDESK_SITE_CONFIG=str(d / "none.toml"), **slow))
        a, b = (
            Client(socket_path=d / "a" / "gw.sock", timeout=310),
            Client(socket_path=d / "b" / "gw.sock", timeout=310),
        )
        lat: dict[str, list[float]] = {"subscription": [], "direct": []}
        lost = {"subscription": 0, "direct": 0}
        for i in range(args.jobs):
            outs = {"subscription": d / f"a-{i}", "direct": d / f"b-{i}"}
            ids = {
                "subscription": _submit(a, outs["subscription"], args.sleep),
                "direct": _submit(b, outs["direct"], args.sleep),
            }
            for path, client in (("subscription", a), ("direct", b)):
                known = _known_at(client, ids[path])
                if known is None:
                    lost[path] += 1
                else:
                    lat[path].append((known - float(outs[path].read_text())) * 1000)
        sub, direct = lat["subscription"], lat["direct"]
        print(
            f"job's last moment -> its user's gateway knows it ended (Slurm lab, {args.jobs} jobs per path, tick 600 s)"
        )
        print(_row("via the facility gateway (subscribed)", sub))
        print(_row("direct (notify --targets-dir)", direct))
        print(f"pushes lost (no end known 30 s after it; both paths hang on the same epilog): {lost}")
        print(f"ratio p50 subscription/direct {statistics.median(sub) / statistics.median(direct):.2f}x")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.run(["scancel", "--name=fdpush-bench"], capture_output=True)
        if not os.environ.get("FRONTDESK_BENCH_KEEP"):
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
