"""Guard rules under every quoting (hypothesis): the verdict depends on the words, not on the quoting."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.guard.checker import check
from frontdesk.guard.model import Decision, GuardContext
from frontdesk.guard.secrets import redact
from frontdesk.guard.shell import parse

CTX = GuardContext(env={"HOME": "/home/a", "SET": "/home/a/build"}, cwd="/home/a/p", home="/home/a")

DANGEROUS = [
    (["rm", "-rf", "/"], "fs.rm-root"),
    (["rm", "-r", "-f", "/home/a"], "fs.rm-root"),
    (["chmod", "-R", "777", "data"], "fs.chmod-world"),
    (["git", "reset", "--hard"], "git.destructive"),
    (["curl", "-k", "https://x.org"], "net.tls-off"),
    (["jupyter", "lab", "--ip=0.0.0.0"], "svc.exposed"),
    (["kill", "-9", "-1"], "proc.kill-all"),
    (["cp", "x", "/dev/shm/y"], "fs.dev-shm"),
]
BENIGN = [
    ["ls", "-la"],
    ["git", "status"],
    ["rm", "-rf", "build"],
    ["chmod", "755", "run.sh"],
    ["python", "-m", "http.server", "--bind", "127.0.0.1"],
]


def _quote_word(word: str, style: int) -> str:
    if style == 0:
        return shlex.quote(word)
    if style == 1:
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`") + '"'
    if style == 2:
        return "'" + word.replace("'", "'\\''") + "'"
    if style == 3:
        return "".join("\\" + c if not c.isalnum() else c for c in word)
    if style == 4 and len(word) > 1:
        return shlex.quote(word[0]) + shlex.quote(word[1:])  # split a word into two quoted halves
    return "$'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


styles = st.lists(st.integers(0, 5), min_size=6, max_size=6)


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(DANGEROUS), quoting=styles)
def test_dangerous_commands_fire_under_any_quoting(case: tuple[list[str], str], quoting: list[int]) -> None:
    words, rule = case
    command = " ".join(_quote_word(w, quoting[i % len(quoting)]) for i, w in enumerate(words))
    verdict = check(command, CTX)
    assert verdict.decision is not Decision.ALLOW and rule in verdict.matches, command


@settings(max_examples=100, deadline=None)
@given(words=st.sampled_from(BENIGN), quoting=styles)
def test_benign_commands_stay_allowed_under_any_quoting(words: list[str], quoting: list[int]) -> None:
    command = " ".join(_quote_word(w, quoting[i % len(quoting)]) for i, w in enumerate(words))
    assert check(command, CTX).decision is Decision.ALLOW, command


word_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(word_text, min_size=1, max_size=5))
def test_shlex_quoted_words_round_trip_through_the_parser(words: list[str]) -> None:
    command = "printf %s " + " ".join(shlex.quote(w) for w in words)
    inv = parse(command, {}).invocations[0]
    assert [w.text for w in inv.argv[2:]] == words


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_check_and_redact_never_raise(text: str) -> None:
    verdict = check(text, CTX)
    assert verdict.decision in tuple(Decision)
    assert isinstance(redact(text), str)


simple_text = st.lists(st.text("abcxyz019_@+:,./-", min_size=1, max_size=8), min_size=1, max_size=6).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(text=simple_text)
def test_fast_path_splits_like_the_parser(text: str) -> None:
    import re

    from hypothesis import assume

    from frontdesk.guard import shell

    fast = [([w.text for w in i.argv], i.env) for i in parse(text, {}).invocations]
    saved = shell._SIMPLE
    shell._SIMPLE = re.compile(r"(?!)")
    try:
        parsed = parse(text, {})
    finally:
        shell._SIMPLE = saved
    assume(not parsed.error)  # tree-sitter gives up on some plain words (`00%`); bash does not
    assert fast == [([w.text for w in i.argv], i.env) for i in parsed.invocations], text


# Second pass: a dangerous command stays stopped wherever it is put — behind any wrapper of the look-through
# table, with a redirection between any two words, fed to a shell as a heredoc, here-string or echo.
WRAPPERS = [
    "nohup {}",
    "timeout 60 {}",
    "nice -n 5 {}",
    "srun --time 10 --ntasks 1 {}",
    "salloc -N 1 {}",
    "stdbuf -oL {}",
    "flock /tmp/l {}",
    "conda run -n base {}",
    "uv run --with x {}",
    "apptainer exec --nv img.sif {}",
    "docker exec -it box {}",
    "sudo -u alice {}",
    "env A=1 {}",
    "busybox {}",
    "mpirun -np 2 {}",
]
SHELL_FEEDS = [
    "bash -c {q}",
    "sh <<< {q}",
    "echo {q} | bash",
    "ssh host {q}",
    "watch -n 5 {q}",
    "tmux new -d {q}",
    "sbatch --wrap={q}",
    "parallel ::: {q}",
]
REDIRECTS = ["2>/dev/null", ">/dev/null", "</dev/null", "2>&1", ">>log.txt"]


@settings(max_examples=150, deadline=None)
@given(
    case=st.sampled_from(DANGEROUS),
    outer=st.sampled_from(WRAPPERS),
    inner=st.sampled_from(WRAPPERS),
    where=st.integers(1, 3),
    red=st.sampled_from(REDIRECTS),
)
def test_wrappers_and_redirections_hide_nothing(
    case: tuple[list[str], str], outer: str, inner: str, where: int, red: str
) -> None:
    words, rule = case
    words = words[:where] + [red] + words[where:]
    command = outer.format(inner.format(" ".join(shlex.quote(w) if w != red else w for w in words)))
    verdict = check(command, CTX)
    assert verdict.decision is not Decision.ALLOW and rule in verdict.matches, command


@settings(max_examples=100, deadline=None)
@given(case=st.sampled_from(DANGEROUS), feed=st.sampled_from(SHELL_FEEDS))
def test_code_handed_to_a_shell_is_checked(case: tuple[list[str], str], feed: str) -> None:
    words, rule = case
    command = feed.format(q=shlex.quote(" ".join(shlex.quote(w) for w in words)))
    verdict = check(command, CTX)
    assert verdict.decision is not Decision.ALLOW and rule in verdict.matches, command


@settings(max_examples=60, deadline=None)
@given(words=st.sampled_from(BENIGN), outer=st.sampled_from(WRAPPERS), feed=st.sampled_from(SHELL_FEEDS))
def test_harmless_commands_stay_allowed_when_wrapped(words: list[str], outer: str, feed: str) -> None:
    plain = " ".join(shlex.quote(w) for w in words)
    for command in (outer.format(plain), feed.format(q=shlex.quote(plain))):
        if command.startswith("sudo"):
            continue  # sudo asks by itself
        assert check(command, CTX).decision is Decision.ALLOW, command
