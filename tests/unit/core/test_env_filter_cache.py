"""The gateway's environment filter remembers its decision per name: the answers stay those of the rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.jobenv import DEFAULT_DENY, filter_env, matches

NAMES = st.text(alphabet="ABKOSTEY_*", min_size=1, max_size=8)
PATTERNS = st.lists(st.text(alphabet="ABKOST_*", min_size=1, max_size=5), max_size=3).map(tuple)


def _rule(env: dict[str, str], deny: tuple[str, ...], allow: tuple[str, ...], site: tuple[str, ...]) -> dict[str, str]:
    return {
        k: v
        for k, v in env.items()
        if not any(matches(k, d) for d in site)
        and (any(matches(k, a) for a in allow) or not any(matches(k, d) for d in deny))
    }


@settings(max_examples=300)
@given(st.lists(st.tuples(st.dictionaries(NAMES, st.just("v"), max_size=6), PATTERNS, PATTERNS, PATTERNS), max_size=6))
def test_the_cached_filter_answers_as_the_rule_whatever_the_order_of_lists(calls: list) -> None:  # type: ignore[type-arg]
    for env, deny, allow, site in calls:  # the same names come back under other lists: no stale answer
        assert filter_env(env, deny, allow, site) == _rule(env, deny, allow, site)
        assert filter_env(env, deny, allow, site) == _rule(env, deny, allow, site)


def test_a_secret_stays_dropped_after_the_same_name_was_allowed_by_another_list() -> None:
    env = {"HF_TOKEN": "s3cret", "HOME": "/h"}
    assert filter_env(env, DEFAULT_DENY, ("HF_TOKEN",)) == env
    assert filter_env(env, DEFAULT_DENY) == {"HOME": "/h"}
    assert filter_env(env, DEFAULT_DENY, ("HF_TOKEN",), ("HF_*",)) == {"HOME": "/h"}
