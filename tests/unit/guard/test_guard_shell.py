"""The shell front end: wrappers are looked through, variables are expanded, quoting is understood."""

from __future__ import annotations

from frontdesk.guard.shell import parse


def argvs(command: str, env: dict[str, str] | None = None) -> list[list[str]]:
    return [
        [w.text for w in inv.argv]
        for inv in parse(command, env if env is not None else {"HOME": "/h"}, "/w").invocations
        if inv.argv
    ]


def test_lists_pipes_and_subshells_yield_every_simple_command() -> None:
    got = argvs("a 1 && b 2 | c 3; (d 4) & e $(f 5)")
    for expected in (["a", "1"], ["b", "2"], ["c", "3"], ["d", "4"], ["f", "5"]):
        assert expected in got


def test_wrappers_are_unwrapped() -> None:
    cmds = {
        "sudo -u bob rm -rf /x": ["rm", "-rf", "/x"],
        "env A=1 -u B rm x": ["rm", "x"],
        "nice -n 5 nohup timeout 10 rm y": ["rm", "y"],
        "bash -c 'rm -rf /z'": ["rm", "-rf", "/z"],
        'sh -lc "rm q"': ["rm", "q"],
        "eval 'rm e'": ["rm", "e"],
        "ls | xargs -n1 -P4 rm -f": ["rm", "-f", ""],
        "find /d -name x -exec rm -f {} +": ["rm", "-f", "/d/{}"],
        "srun -p gpu -N 2 --gres=gpu:1 python t.py": ["python", "t.py"],
        "watch -n 5 'rm w'": ["rm", "w"],
        "python3 -m http.server 8000": ["http.server", "8000"],
    }
    for command, inner in cmds.items():
        assert inner in argvs(command), command


def test_pipeline_upstream_and_process_substitution() -> None:
    invs = parse("curl -s u | tee x | bash", {}).invocations
    bash = [i for i in invs if i.program == "bash"][0]
    assert bash.upstream == ["curl", "tee"]
    sub = [i for i in parse("bash <(wget -qO- u)", {}).invocations if i.program == "bash"][0]
    assert sub.stdin_from == ["wget"]


def test_variables_expand_and_unset_ones_are_known() -> None:
    inv = parse('rm -rf "$DIR"/ ${SET}/x ${GONE:?}/y ${D2:-/tmp}/z', {"SET": "/s"}).invocations[0]
    words = inv.argv[2:]
    assert words[0].text == "/" and words[0].unset_vars == ("DIR",) and words[0].leading_unset
    assert words[1].text == "/s/x" and not words[1].unset_vars
    assert not words[2].unset_vars  # ${GONE:?} stops the shell: not a collapse
    assert words[3].text == "/tmp/z"


def test_assignments_in_the_command_are_followed() -> None:
    inv = [i for i in parse("D=/tmp/x; rm -rf $D/", {}).invocations if i.program == "rm"][0]
    assert inv.argv[2].text == "/tmp/x/" and not inv.argv[2].unset_vars
    inv = [i for i in parse("D=; rm -rf $D/", {}).invocations if i.program == "rm"][0]
    assert inv.argv[2].unset_vars == ("D",)


def test_unknown_environment_is_not_unset() -> None:
    inv = parse("rm -rf $X/", None).invocations[0]
    assert inv.argv[2].dynamic and not inv.argv[2].unset_vars
    inv = parse("rm -rf $X/", {}, env_complete=False).invocations[0]
    assert not inv.argv[2].unset_vars


def test_quoting_forms_expand_like_bash() -> None:
    inv = parse("""echo 'a b' "c $H" d\\ e $'f\\tg' ~/x""", {"H": "h", "HOME": "/home/u"}).invocations[0]
    assert [w.text for w in inv.argv[1:]] == ["a b", "c h", "d e", "f\tg", "/home/u/x"]


def test_cd_moves_the_cwd_of_later_commands() -> None:
    invs = parse("cd sub && ./run.sh", {}, "/w").invocations
    assert invs[-1].cwd == "/w/sub"


def test_parse_errors_are_reported() -> None:
    assert parse('echo "open', {}).error
    assert not parse("time make -j8 && echo $(( $(nproc) * 2 ))", {}).error
    assert not parse("cat <<'EOF'\nhi $x\nEOF", {}).error


def test_non_ascii_that_crashes_tree_sitter_bash_is_parsed_safely() -> None:
    """tree-sitter-bash 0.25 segfaults on `{` + U+CF166 now and then; the parser must never see it."""
    import subprocess
    import sys

    code = (
        "from frontdesk.guard.shell import parse\n"
        "for _ in range(300):\n"
        "    inv = parse('echo a{\\U000cf166 \"h\\u00e9llo\" && rm -rf /tmp/x', {}).invocations\n"
        "assert [w.text for w in inv[0].argv] == ['echo', 'a{\\U000cf166', 'h\\u00e9llo']\n"
    )
    for _ in range(4):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr[-500:]
