"""A substrate failure seen by three users becomes a cluster lesson every user reads (the site rule, memory.md):
it must hold only what the three share (the signature, its kind and detail, the application), never the words of
the one user whose job happened to be the third. Before, the cluster lesson kept that job's normalised log line,
its modules, partition and project: carol's project code name in her error line reached alice's and bob's
memory search, admission notices and reports (probe: alice, bob, carol, each with a word of their own)."""

from __future__ import annotations

import json
from typing import Any

from facility_helpers import Facility

LIB = "libfdsiteprobe.so.7"
APP = "fdsiteprobe"  # the application no other test's job runs


def _failing(word: str) -> dict[str, Any]:
    """A job of `APP` that fails with the missing library, its stderr line holding the user's own word."""
    line = f"error while loading shared libraries: {LIB}: cannot open shared object file: No such file ({word})"
    command = ["/bin/sh", "-c", f"echo '{line}' >&2; exit 127", APP]
    return {"method": "POST", "path": "/v1/jobs", "body": {"spec": {"command": command}, "context": {"cwd": "/tmp"}}}


def _run(facility: Facility, user: str, word: str) -> None:
    [[status, job]] = facility.probe(user, [_failing(word)])
    assert status == 200, job
    [[status, done]] = facility.probe(
        user, [{"method": "POST", "path": "/v1/wait", "body": {"ids": [job["id"]], "timeout": 60}}]
    )
    assert status == 200 and done["reports"][0]["state"] == "FAILED", done


def test_a_site_lesson_holds_none_of_the_third_users_words(facility: Facility) -> None:
    words = {"alice": "fdwordalicezeta", "bob": "fdwordbobkappa", "carol": "fdwordcarolomega"}
    for user, word in words.items():
        _run(facility, user, word)
    for user in words:
        [[status, found]] = facility.probe(user, [{"method": "GET", "path": "/v1/memory/search?q=libfdsiteprobe"}])
        assert status == 200, found
        site = [x for x in found["lessons"] if x["scope"] == "cluster"]
        assert len(site) == 1 and site[0]["provenance"]["source"] == "site", found  # the rule made it
        text = json.dumps(site[0])
        leaked = [w for other, w in words.items() if w in text]
        assert leaked == [], (user, leaked, site[0])
        own = [x for x in found["lessons"] if x["scope"] == "user"]
        assert own and all(x["scope_name"] == user for x in own), found
        assert words[user] in json.dumps(own), own  # each keeps their own line in their own lesson
