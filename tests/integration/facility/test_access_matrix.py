"""Every endpoint × caller (owner alice, labmate bob, outsider carol, admin fdadmin-user) on a root facility gateway.

Each cell asserts the exact answer; every refusal is an `access.denied` event naming the caller (counted
exactly). Transports: HTTP over the Unix socket (SO_PEERCRED), TCP with hashed tokens, TCP with MUNGE, the
real CLI (exit codes), the MCP server and the event stream.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import Counter
from typing import Any

import pytest
from facility_helpers import SYSTEM_PY, Facility, run_as, user_env

ADMIN = "fdadmin-user"
CALLERS = ("alice", "bob", "carol", ADMIN)
F = "forbidden"
NF = "not_found"


def _one(fac: Facility, user: str, method: str, path: str, body: Any = None, **env: str) -> list[Any]:
    out: list[Any] = fac.probe(user, [{"method": method, "path": path, "body": body}], env=env)[0]
    return out


@pytest.fixture(scope="module")
def world(facility: Facility) -> dict[str, Any]:
    """alice's objects: an ended job A (with a secret-ish output), running B1 and B2, session S, lesson L."""
    sid = f"fac-alice-{secrets.token_hex(4)}"
    calls = [
        {"method": "POST", "path": "/v1/sessions", "body": {"session": sid, "harness": "claude-code", "cwd": "/tmp"}},
        {
            "method": "POST",
            "path": "/v1/jobs",
            "body": {"spec": {"command": ["echo", "alice-private-output"]}, "context": {"cwd": "/tmp", "session": sid}},
        },
        {
            "method": "POST",
            "path": "/v1/jobs",
            "body": {"spec": {"command": ["sleep", "300"]}, "context": {"cwd": "/tmp"}},
        },
        {
            "method": "POST",
            "path": "/v1/jobs",
            "body": {"spec": {"command": ["sleep", "300"]}, "context": {"cwd": "/tmp"}},
        },
        {
            "method": "POST",
            "path": "/v1/memory/lessons",
            "body": {"kind": "host_oom", "cause": "needs 64G", "template": "python train.py", "fix": "ask for 64G"},
        },
    ]
    answers = facility.probe("alice", calls)
    assert [a[0] for a in answers] == [200] * 5, answers
    a, b1, b2 = (answers[i][1]["id"] for i in (1, 2, 3))
    waited = _one(facility, "alice", "POST", "/v1/wait", {"ids": [a], "timeout": 60})
    assert waited[0] == 200 and waited[1]["done"], waited
    return {"A": a, "B1": b1, "B2": b2, "S": sid, "L": answers[4][1]["id"]}


def _cells(w: dict[str, Any]) -> list[tuple[str, str, Any, dict[str, Any], str | None]]:
    """(method, path, body, {caller: expected status}, the refused target's name)."""
    a, s, lesson = w["A"], w["S"], w["L"]
    owner_admin = {"alice": 200, "bob": F, "carol": F, ADMIN: 200}
    # a session id names the caller's own session (keyed by (user, id)): alice's S is out of everyone else's reach,
    # the others' S does not exist (404, nothing of alice's refused, so nothing journalled) until their own hook
    # registers it; a verdict names the caller's own S. An admin's read (a GET) of an id several users hold by now
    # (each caller's hook below registered its own S) is a one-line bad_input naming them; a change lands only on a
    # session it names (?user=), never on another user's by default
    session = {"alice": 200, "bob": NF, "carol": NF, ADMIN: "bad_input"}
    session_change = {"alice": 200, "bob": NF, "carol": NF, ADMIN: NF}
    own = dict.fromkeys(CALLERS, 200)
    admin_only = {"alice": F, "bob": F, "carol": F, ADMIN: 200}
    verdict = {"verdict": "deny", "session": s, "rule": "fs.mkfs", "command": "mkfs.ext4 /dev/fd-does-not-exist"}
    return [
        ("GET", f"/v1/jobs/{a}", None, owner_admin, f"job {a}"),
        ("GET", f"/v1/jobs/{a}/report", None, owner_admin, f"job {a}"),
        ("GET", f"/v1/jobs/{a}/logs", None, owner_admin, f"job {a}"),
        ("POST", "/v1/wait", {"ids": [a], "timeout": 5}, owner_admin, f"job {a}"),
        ("GET", f"/v1/sessions/{s}", None, session, None),
        ("GET", f"/v1/sessions/{s}/unread", None, session, None),
        ("POST", f"/v1/sessions/{s}/ack", {"jobs": [a]}, session_change, None),
        ("POST", f"/v1/sessions/{s}/turn", {"state": "idle"}, session_change, None),
        ("POST", f"/v1/sessions/{s}/hook", {"event": "notify", "budget": 0}, own, None),
        ("POST", "/v1/guard/verdicts", verdict, own, None),
        ("POST", "/v1/policy/reload", None, admin_only, "the policy"),
        ("POST", "/v1/policy/drain", {"node": "fd-test-node"}, admin_only, "the policy"),
        ("POST", "/v1/policy/undrain", {"node": "fd-test-node"}, admin_only, "the policy"),
        # a lesson outside the caller's scopes is 404 (no hint) and journalled; an admin reads it (audited)
        (
            "GET",
            f"/v1/memory/lessons/{lesson}",
            None,
            {"alice": 200, "bob": NF, "carol": NF, ADMIN: 200},
            f"lesson {lesson}",
        ),
        ("GET", "/v1/health", None, dict.fromkeys(CALLERS, 200), None),
        ("GET", "/v1/cluster", None, dict.fromkeys(CALLERS, 200), None),
    ]


def test_every_endpoint_by_every_caller_over_the_unix_socket(facility: Facility, world: dict[str, Any]) -> None:
    cells = _cells(world)
    since = facility.root_client().health()["last_seq"]
    expected_refusals: Counter[tuple[str, str]] = Counter()
    for user in CALLERS:
        answers = facility.probe(user, [{"method": m, "path": p, "body": b} for m, p, b, _, _ in cells])
        for (method, path, _, want, target), (status, answer) in zip(cells, answers, strict=True):
            assert status == want[user], (user, method, path, answer)
            if status == 200 and path.endswith("/hook"):
                assert answer["session"] == world["S"] and answer["active_jobs"] == [], answer  # the caller's own
            if status == F:
                assert answer == f"{user} may not {_verb(method, path)} {target}", answer
            if status != 200 and target is not None:
                expected_refusals[(user, target)] += 1
            if status == 200 and path.endswith("/logs"):
                assert answer["lines"] == ["alice-private-output"]
            if status == 200 and path.endswith("/report"):
                assert answer["job_id"] == world["A"] and answer["state"] == "COMPLETED"
    audit = _audit(facility, since)
    got = Counter((e["principal"], e["data"]["target"]) for e in audit if e["data"]["target"] != "/v1/memory")
    assert got == expected_refusals
    assert all(e["data"]["via"] == "unix" for e in audit)
    status, admin_uses = _one(facility, ADMIN, "GET", f"/v1/events?since={since}&kind=access.admin")
    assert status == 200  # what the admin did with alice's objects is journalled too, once per use
    used = Counter(e["data"]["target"] for e in admin_uses if e["principal"] == ADMIN)
    assert used == Counter(t for _, _, _, want, t in cells if want[ADMIN] == 200 and t and t != "the policy")
    assert {e["data"]["owner"] for e in admin_uses} == {"alice"}


def _verb(method: str, path: str) -> str:
    if path.endswith("/report"):
        return "read the report of"
    if path.endswith("/logs"):
        return "read the logs of"
    if path == "/v1/wait":
        return "wait for"
    if path.startswith("/v1/jobs/"):
        return "cancel" if path.endswith("/cancel") else "see"
    if path.startswith("/v1/guard"):
        return "record a guard verdict for"
    return "change"


def _audit(fac: Facility, since: int) -> list[dict[str, Any]]:
    status, events = _one(fac, ADMIN, "GET", f"/v1/events?since={since}&kind=access.denied")
    assert status == 200
    for e in events:
        if e["data"]["target"].startswith("/v1/memory"):
            e["data"]["target"] = "/v1/memory"
    return list(events)


def test_lists_queue_and_events_show_each_caller_only_its_own(facility: Facility, world: dict[str, Any]) -> None:
    mine = {world["A"], world["B1"], world["B2"]}
    calls = [
        {"method": "GET", "path": "/v1/jobs"},
        {"method": "GET", "path": "/v1/jobs?principal=alice"},
        {"method": "GET", "path": "/v1/queue"},
        {"method": "GET", "path": "/v1/events?since=0"},
    ]
    seen = {user: facility.probe(user, calls) for user in CALLERS}
    for user in CALLERS:
        jobs, by_alice, queue, events = (a[1] for a in seen[user])
        alice_ids = {j["id"] for j in jobs if j["principal"] == "alice"}
        queued = {j["id"] for j in queue["jobs"] if j["principal"] == "alice"}
        evs = {e["job_id"] for e in events if e["job_id"] in mine and e["kind"] != "access.denied"}
        privileged = user in ("alice", ADMIN)
        assert alice_ids == (mine if privileged else set()), user
        assert {j["id"] for j in by_alice} == (mine if privileged else set()), user
        assert queued == ({world["B1"], world["B2"]} if privileged else set()), user
        assert evs == (mine if privileged else set()), user
        assert "cpus" in queue["inventory"]  # capacity is for everyone
        others = [e for e in events if e["principal"] not in (user, None)]
        assert privileged or others == [], (user, others[:3])


def test_tokens_and_munge_over_tcp(facility: Facility, world: dict[str, Any]) -> None:
    a = world["A"]
    since = facility.root_client().health()["last_seq"]
    calls = [{"method": "GET", "path": f"/v1/jobs/{a}/report"}, {"method": "GET", "path": f"/v1/jobs/{a}/logs"}]
    for how in ("token", "munge"):
        for user in CALLERS:
            env = {"FRONTDESK_URL": facility.url}
            env.update({"FRONTDESK_TOKEN": facility.tokens[user]} if how == "token" else {"FRONTDESK_AUTH": "munge"})
            got = [s for s, _ in facility.probe(user, calls, env=env)]
            assert got == ([200, 200] if user in ("alice", ADMIN) else [F, F]), (how, user)
    audit = _audit(facility, since)
    assert Counter((e["principal"], e["data"]["via"]) for e in audit) == Counter(
        {("bob", "token"): 2, ("carol", "token"): 2, ("bob", "munge"): 2, ("carol", "munge"): 2}
    )
    bad = facility.probe("carol", calls[:1], env={"FRONTDESK_URL": facility.url, "FRONTDESK_TOKEN": "guess"})
    assert bad == [["unauthenticated", "a valid bearer token or MUNGE credential is required"]]


def test_a_revoked_token_stops_at_once_and_a_replayed_munge_credential_fails(facility: Facility) -> None:
    env = {"FRONTDESK_URL": facility.url, "FRONTDESK_TOKEN": facility.tokens["carol"]}
    assert _one(facility, "carol", "GET", "/v1/health", **env)[0] == 200
    text = facility.tokens_file.read_text()
    facility.tokens_file.write_text("".join(ln + "\n" for ln in text.splitlines() if not ln.startswith("carol ")))
    try:
        assert _one(facility, "carol", "GET", "/v1/health", **env)[0] == "unauthenticated"  # no restart
    finally:
        facility.tokens_file.write_text(text)
    code = (
        "import json,sys,socket\n"
        "from frontdesk.identity import munge_credential\n"
        "from frontdesk.wire import request_binding\n"
        "cred = munge_credential(request_binding('GET', '/v1/health', b''))\n"
        "host, port = sys.argv[1].rsplit(':', 1)\n"
        "out = []\n"
        "for _ in range(2):\n"
        "    s = socket.create_connection((host, int(port)))\n"
        "    s.sendall(f'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: MUNGE {cred}\\r\\n"
        "Connection: close\\r\\n\\r\\n'.encode())\n"
        "    out.append(s.makefile('rb').readline().split()[1].decode())\n"
        "print(json.dumps(out))\n"
    )
    r = run_as("bob", [SYSTEM_PY, "-c", code, facility.url.split("//")[1]], env=facility.env())
    assert json.loads(r.stdout) == ["200", "401"], r.stderr  # munged refuses the replay


def test_the_cli_answers_refusals_with_exit_77_and_one_line(facility: Facility, world: dict[str, Any]) -> None:
    a = str(world["A"])
    for args, verb in (
        (("report", a), "read the report of"),
        (("logs", a), "read the logs of"),
        (("wait", a), "wait for"),
    ):
        for user in CALLERS:
            r = facility.cli(user, *args)
            if user in ("alice", ADMIN):
                assert r.returncode == 0, (user, args, r.stderr)
            else:
                assert (r.returncode, r.stderr) == (77, f"frontdesk: {user} may not {verb} job {a}\n"), (user, args)
    r = facility.cli("carol", "status", a, "--json")
    assert r.returncode == 77 and json.loads(r.stdout) == {
        "error": "forbidden",
        "message": f"carol may not see job {a}",
        "target": f"job {a}",
    }


def test_the_mcp_server_refuses_another_users_job(facility: Facility, world: dict[str, Any]) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    a = world["A"]

    async def as_user(user: str) -> tuple[bool, str]:
        env = user_env(user, FRONTDESK_SITE_CONFIG=str(facility.site))
        params = StdioServerParameters(
            command="runuser", args=["-u", user, "--", *env, SYSTEM_PY, "-m", "frontdesk.cli.main", "mcp"], cwd="/tmp"
        )
        async with Client(params) as c:
            res = await c.call_tool("report", {"job_id": a})
            return bool(res.is_error), "".join(getattr(x, "text", "") for x in res.content)

    for user in CALLERS:
        is_error, text = asyncio.run(asyncio.wait_for(as_user(user), 120))
        if user in ("alice", ADMIN):
            assert not is_error and "COMPLETED" in text, (user, text)
        else:
            assert is_error and f"{user} may not read the report of job {a}" in text, (user, text)


def test_the_event_stream_carries_only_the_callers_events(facility: Facility, world: dict[str, Any]) -> None:
    code = (
        "import json, threading\n"
        "from frontdesk.client import Client\n"
        "c = Client(timeout=60)\n"
        "seen = []\n"
        "def follow():\n"
        "    for e in c.events(since=0, follow=True):\n"
        "        seen.append(e)\n"
        "        if e['kind'] == 'job.report' and e['principal'] == 'bob':\n"
        "            return\n"
        "t = threading.Thread(target=follow); t.start()\n"
        "c.submit(spec={'command': ['echo', 'bob-live']}, context={'cwd': '/tmp'})\n"
        "t.join(90)\n"
        "print(json.dumps(seen))\n"
    )
    r = run_as("bob", [SYSTEM_PY, "-c", code], env=facility.env())
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout)
    assert seen and seen[-1]["kind"] == "job.report"
    assert {e["principal"] for e in seen} <= {"bob", None}
    theirs = {e["job_id"] for e in seen if e["kind"] != "access.denied"}  # bob's own refusals name alice's job
    assert not {world["A"], world["B1"], world["B2"]} & theirs


def test_memory_scopes_follow_real_identities(facility: Facility, world: dict[str, Any]) -> None:
    lesson = world["L"]
    path = f"/v1/memory/lessons/{lesson}"
    promoted = _one(facility, "alice", "POST", f"{path}/promote", {"scope": "lab", "name": "lab1"})
    assert promoted[0] == 200 and promoted[1]["scope"] == "lab", promoted
    path = f"/v1/memory/lessons/{promoted[1]['id']}"  # promotion makes the lab's copy
    got = {u: _one(facility, u, "GET", path)[0] for u in CALLERS}
    assert got == {"alice": 200, "bob": 200, "carol": NF, ADMIN: 200}  # a labmate reads lab lessons, carol cannot
    lid = promoted[1]["id"]
    since = facility.root_client().health()["last_seq"]
    assert _one(facility, "carol", "DELETE", path) == [NF, f"no lesson {lid}"]
    assert _one(facility, "carol", "POST", f"{path}/promote", {"scope": "cluster"}) == [NF, f"no lesson {lid}"]
    assert _one(facility, "bob", "DELETE", path) == [
        F,
        f"lesson {lid} is not yours to forget: ask its owner or an admin",
    ]
    refusals = _audit(facility, since)  # hidden lessons and the lesson store's refusals are journalled
    assert [(e["principal"], e["data"]["action"], e["data"]["owner"]) for e in refusals] == [
        ("carol", "forget", "lab:lab1"),
        ("carol", "promote", "lab:lab1"),
        ("bob", "DELETE", None),
    ]
    assert _one(facility, ADMIN, "DELETE", path)[0] == 200  # admins may forget anyone's lesson
    status, admin_uses = _one(facility, ADMIN, "GET", f"/v1/events?since={since}&kind=access.admin")
    assert status == 200
    assert [(e["principal"], e["data"]["action"], e["data"]["target"]) for e in admin_uses] == [
        (ADMIN, "forget", f"lesson {lid}")
    ]


def test_cancel_is_for_the_owner_and_admins(facility: Facility, world: dict[str, Any]) -> None:
    b1, b2 = world["B1"], world["B2"]
    for user in ("bob", "carol"):
        assert _one(facility, user, "POST", f"/v1/jobs/{b1}/cancel", {}) == [F, f"{user} may not cancel job {b1}"]
    assert _one(facility, "alice", "POST", f"/v1/jobs/{b1}/cancel", {})[0] == 200
    assert _one(facility, ADMIN, "POST", f"/v1/jobs/{b2}/cancel", {})[0] == 200
    for job in (b1, b2):
        done = _one(facility, "alice", "POST", "/v1/wait", {"ids": [job], "timeout": 60})
        assert done[1]["reports"][0]["state"] == "CANCELLED"


def test_a_compute_node_finds_the_gateway_by_the_site_url_and_uses_munge(
    facility: Facility, world: dict[str, Any]
) -> None:
    site = facility.dir / "compute-node.toml"  # no facility socket on this node: the site names its URL
    text = facility.site.read_text().replace(str(facility.socket), "/nonexistent/frontdesk/gateway.sock")
    site.write_text(text.replace("[gateway]\n", f'[gateway]\nurl = "{facility.url}"\n', 1))
    site.chmod(0o644)
    a = world["A"]
    since = facility.root_client().health()["last_seq"]
    env = {"FRONTDESK_SITE_CONFIG": str(site)}
    assert _one(facility, "alice", "GET", f"/v1/jobs/{a}", **env)[0] == 200
    assert _one(facility, "bob", "GET", f"/v1/jobs/{a}", **env) == [F, f"bob may not see job {a}"]
    (refusal,) = _audit(facility, since)
    assert (refusal["principal"], refusal["data"]["via"]) == ("bob", "munge")


def test_another_users_idempotency_key_does_not_hand_over_their_job(facility: Facility) -> None:
    key = f"k-{secrets.token_hex(4)}"
    body = {"spec": {"command": ["true"], "idempotency_key": key}, "context": {"cwd": "/tmp"}}
    first = _one(facility, "alice", "POST", "/v1/jobs", body)
    assert first[0] == 200 and first[1]["principal"] == "alice"
    again = _one(facility, "alice", "POST", "/v1/jobs", body)
    assert again[0] == 200 and again[1]["duplicate"] and again[1]["id"] == first[1]["id"]
    theirs = _one(facility, "carol", "POST", "/v1/jobs", body)  # the same key of another user is another key
    assert theirs[0] == 200 and theirs[1]["principal"] == "carol" and theirs[1]["id"] != first[1]["id"], theirs
    assert not theirs[1].get("duplicate")  # (test_probe_idempotency_scope.py)


def test_a_job_may_depend_only_on_jobs_its_submitter_may_see(facility: Facility, world: dict[str, Any]) -> None:
    a = world["A"]
    body = {"spec": {"command": ["true"], "depends_on": [a]}, "context": {"cwd": "/tmp"}}
    assert _one(facility, "carol", "POST", "/v1/jobs", body) == [F, f"carol may not depend on job {a}"]
    assert _one(facility, "alice", "POST", "/v1/jobs", body)[0] == 200
