"""The job environment filter (frontdesk.jobenv): patterns, the site's lists, the submitter's opt-in."""

from __future__ import annotations

import fnmatch
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.errors import ConfigError, UserError
from frontdesk.jobenv import capture_env, filter_env, login_env, matches, shepherd_env, site_filter

names = st.text(alphabet="ABCXYZ_*", min_size=0, max_size=8)


@given(names.filter(lambda n: "*" not in n), names)
def test_matches_agrees_with_fnmatch_for_star_patterns(name: str, pattern: str) -> None:
    assert matches(name, pattern) == fnmatch.fnmatchcase(name, pattern)


@pytest.mark.parametrize(
    "name",
    ["FRONTDESK_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "DB_PASSWORD", "OPENAI_API_KEY"],
)
def test_the_builtin_denylist_drops_usual_secrets(name: str) -> None:
    assert filter_env({name: "x", "MY_EXPERIMENT": "exp42"}) == {"MY_EXPERIMENT": "exp42"}


def test_the_site_lists_and_the_submitters_opt_in() -> None:
    env = {
        "HF_TOKEN": "a",
        "MY_SECRET_OK": "b",
        "FRONTDESK_ENV_ALLOW": "MY_SECRET_*, SITE_BANNED",
        "SITE_BANNED": "c",
        "PATH": "/usr/bin",
        "PWD": "/somewhere",
    }
    kept = site_filter(env, {"allow": ["HF_TOKEN"], "deny": ["SITE_BANNED"]})
    assert kept == {
        "HF_TOKEN": "a",
        "MY_SECRET_OK": "b",
        "FRONTDESK_ENV_ALLOW": env["FRONTDESK_ENV_ALLOW"],
        "PATH": "/usr/bin",
    }
    # The client's own credential never survives, even when the submitter "allows" it.
    assert "FRONTDESK_TOKEN" not in site_filter({"FRONTDESK_TOKEN": "t", "FRONTDESK_ENV_ALLOW": "*"}, {})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"A=B": "x"}, "not an environment variable"),
        ({"A": "x\0"}, "not an environment variable"),
        ({"A": 1}, "strings"),
    ],
)
def test_bad_environments_are_refused(env: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        site_filter(env, {})


def test_a_huge_environment_is_refused_not_truncated() -> None:
    with pytest.raises(UserError, match="more than"):
        site_filter({"BIG": "x" * (1 << 20)}, {})


def test_a_bad_site_list_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"\[env\] deny"):
        site_filter({}, {"deny": "FOO"})


def test_capture_keeps_everything_but_frontdesk_credentials() -> None:
    env = {"FRONTDESK_TOKEN": "t", "CLAUDE_CODE_MESSAGING_TOKEN": "i", "GITHUB_TOKEN": "g", "X": "1"}
    got = capture_env(env)
    assert got.pop("FRONTDESK_UMASK") == f"{_umask():04o}"  # the client's own umask, for the job (SLURM_UMASK)
    assert got == {"GITHUB_TOKEN": "g", "X": "1"}  # the gateway, not the client, applies the policy


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def test_capture_sends_this_processes_umask_never_an_inherited_one() -> None:
    old = os.umask(0o077)
    try:
        assert capture_env({"FRONTDESK_UMASK": "0000"})["FRONTDESK_UMASK"] == "0077"  # a job's stale value
    finally:
        os.umask(old)


@pytest.mark.parametrize(
    ("raw", "mask"),
    [("0077", 0o077), ("022", 0o022), ("0", 0), ("0777", 0o777), ("", None), ("0088", None), ("-22", None),
     ("+22", None), ("٠٧٧", None), ("00777", None), ("0x1f", None), (" 22", None)],
)  # fmt: skip
def test_the_shepherd_takes_only_a_well_formed_umask(raw: str, mask: int | None) -> None:
    from frontdesk.backends.runas import umask_of

    assert umask_of({"FRONTDESK_UMASK": raw} if raw else {}) == mask


def test_login_and_shepherd_environments() -> None:
    assert login_env("fdu1", "/home/fdu1", "")["SHELL"] == "/bin/sh"
    gateway = {
        "PATH": "/p",
        "FRONTDESK_NO_CGROUP": "1",
        "FRONTDESK_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "s",
        "HOME": "/r",
    }
    assert shepherd_env(gateway) == {"PATH": "/p", "FRONTDESK_NO_CGROUP": "1"}
