"""The regex prefilter and the whole-file line search give what a search per line gives, on generated patterns."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.storage.grep import GrepOptions, _lines_of_matches, _matching_lines
from frontdesk.storage.literals import lines_safe, required_literals

ATOMS = st.sampled_from(["a", "b", "c", "ab", "abc", " ", ".", "[ab]", "[^a]", r"\s", r"\w", "^", "$", r"\b", r"\n"])
QUANT = st.sampled_from(["", "", "*", "+", "?", "{0,2}", "{2}", "+?"])


def _regex() -> st.SearchStrategy[str]:
    leaf = st.builds(lambda a, q: a + q if a not in ("^", "$", r"\b") else a, ATOMS, QUANT)

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        seq = st.lists(inner, min_size=1, max_size=4).map("".join)
        return st.one_of(
            seq,
            st.lists(seq, min_size=2, max_size=3).map("|".join),
            st.builds(lambda s, q: f"(?:{s}){q}", seq, QUANT),
            st.builds(lambda s, q: f"({s}){q}", seq, QUANT),
        )

    return st.recursive(leaf, grow, max_leaves=8)


TEXT = st.lists(st.sampled_from(["a", "b", "c", " ", "\n", "ab", "abc", "x"]), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(pattern=_regex(), text=TEXT, word=st.booleans())
def test_every_match_holds_one_of_the_required_literals(pattern: str, text: str, word: bool) -> None:
    opts = GrepOptions(pattern.encode(), (b".",), word=word)
    pat, flags = opts.source()
    found = required_literals(pat, flags)
    data = text.encode()
    if found is None:
        return
    assert found and all(found)
    for m in re.finditer(pat, data, flags):
        assert any(lit in m.group() for lit in found), (pattern, text, found)  # inside the match itself
    prefilter = opts.prefilter()
    if re.search(pat, data, flags) is not None:
        held = prefilter in data if isinstance(prefilter, bytes) else any(x in data for x in prefilter or (b"",))
        assert held, (pattern, text, prefilter)


@settings(max_examples=400, deadline=None)
@given(pattern=_regex(), text=TEXT, word=st.booleans(), max_count=st.one_of(st.none(), st.integers(1, 3)))
def test_the_whole_file_search_finds_the_lines_a_search_per_line_finds(
    pattern: str, text: str, word: bool, max_count: int | None
) -> None:
    opts = GrepOptions(pattern.encode(), (b".",), word=word, max_count=max_count)
    pat, flags = opts.source()
    rx = re.compile(pat, flags)
    data = text.encode()
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    per_line = _matching_lines(lines, rx, opts, None)
    if lines_safe(pat, flags):
        assert _matching_lines(lines, rx, opts, data) == per_line, (pattern, text)
        whole = _lines_of_matches(data, len(lines), rx)
        assert whole is None or whole == [i for i, ln in enumerate(lines) if rx.search(ln)]


def test_literals_of_common_patterns() -> None:
    assert required_literals(rb"NEE.LE_L[O]SS|cla+ss Mo?del 99", re.M) == (b"LE_LOSS", b"del 99")
    assert required_literals(rb"foo(bar)+baz") == (b"foo",)
    assert required_literals(rb"(?i)abc") is None
    assert required_literals(rb"ab(?i:cd)e") == (b"ab",)
    assert required_literals(rb"a|b*") is None  # one branch needs nothing
    assert required_literals(rb"[ab]c?") is None


def test_assertions_that_can_see_past_a_line_are_searched_per_line() -> None:
    assert lines_safe(rb"(?<!\w)(?:foo|bar)(?!\w)", re.M)
    assert not lines_safe(rb"foo\Z", re.M)
    assert not lines_safe(rb"\Afoo", re.M)
    assert not lines_safe(rb"foo(?!\s)", re.M)
    assert not lines_safe(rb"(?:x|(?<=\n)y)", re.M)
