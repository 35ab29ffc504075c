"""Commands that write a file named as an argument, and which argument that is.

`tee F`, `dd of=F`, `sed -i ... F`, `perl -pi -e ... F`, `cp SRC F`, `truncate -s 0 F`, `sort -o F`, `curl -o F`
write F as surely as `> F` does, so each write becomes a redirection the rules already read
(`redirect_targets_any`): `>` when the file is written afresh, `>>` when it is appended to, `<>` when it is
changed in place or replaced by another file (content neither emptied nor shown). Per-tool knowledge is data
where it can be; a few tools need their own reading of the words. Nothing here touches the filesystem.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from frontdesk.guard.lookthrough import opt_width
from frontdesk.guard.words import Invocation, Word

__all__ = ["file_writes", "emptied", "WRITERS", "EDIT"]

EDIT = "<>"
"""The operator of an in-place change (bash's read-write open: the file is not emptied first)."""

Writes = list[tuple[str, Word]]


def _positionals(args: list[Word], values: frozenset[str] = frozenset()) -> list[Word]:
    out: list[Word] = []
    i = 0
    ended = False
    while i < len(args):
        t = args[i].text
        if not ended and t == "--":
            ended = True
        elif not ended and args[i].is_flag:
            i += opt_width(t, values) - 1
        else:
            out.append(args[i])
        i += 1
    return out


def _tee(args: list[Word]) -> Writes:
    op = (
        ">>"
        if any(w.text in ("-a", "--append") or re.fullmatch(r"-[aip]+", w.text) and "a" in w.text for w in args)
        else ">"
    )
    return [(op, w) for w in _positionals(args) if w.text != "-"]


def _sponge(args: list[Word]) -> Writes:
    return [(">>" if "-a" in [w.text for w in args] else ">", w) for w in _positionals(args)[:1]]


def _dd(args: list[Word]) -> Writes:
    texts = [w.text for w in args]
    conv = ",".join(t[5:] for t in texts if t.startswith("conv="))
    oflag = ",".join(t[6:] for t in texts if t.startswith("oflag="))
    op = ">>" if "append" in oflag else EDIT if "notrunc" in conv else ">"
    return [(op, Word(t[3:], t[3:])) for t in texts if t.startswith("of=") and len(t) > 3]


def _in_place_sed(args: list[Word]) -> Writes:
    """`sed -i[SUF] SCRIPT FILE...` (`-e`/`-f` take the script; `-ni`, `--in-place=.bak`)."""
    if not any(re.fullmatch(r"-[nrEsuz]*i\S*", w.text) or w.text.startswith("--in-place") for w in args):
        return []
    rest = [w for w in args if not (re.fullmatch(r"-[nrEsuz]*i\S*", w.text) or w.text.startswith("--in-place"))]
    files = _positionals(rest, frozenset(("-e", "-f", "--expression", "--file", "-l", "--line-length")))
    scripted = any(
        w.text in ("-e", "-f", "--expression", "--file") or w.text.startswith(("--expression=", "--file="))
        for w in args
    )
    return [(EDIT, w) for w in (files if scripted else files[1:])]


def _in_place_perl(args: list[Word]) -> Writes:
    """`perl -pi -e CODE FILE...`, `perl -i.bak -pe ...`, `ruby -pi -e ...`: the files after the code."""
    if not any(re.fullmatch(r"-[a-zA-Z0-9]*i\S*", w.text) and not w.text.startswith("--") for w in args):
        return []
    coded = any(re.fullmatch(r"-[a-zA-Z0-9]*[eE]", w.text) for w in args)
    files = _positionals(args, frozenset(("-e", "-E", "-pe", "-ne", "-pie", "-I", "-M", "-m")))
    return [(EDIT, w) for w in (files if coded else files[1:])]


def _in_place_awk(args: list[Word]) -> Writes:
    texts = [w.text for w in args]
    if (
        not any(t == "-i" and texts[k + 1 : k + 2] == ["inplace"] for k, t in enumerate(texts))
        and "-iinplace" not in texts
    ):
        return []
    files = _positionals(args, frozenset(("-i", "-v", "-f", "-F", "-e")))
    return [(EDIT, w) for w in files[1:]]


def _copy_dest(args: list[Word]) -> Writes:
    """cp/mv/install/ln/rsync: the destination (`-t DIR` or the last word) is replaced by another file."""
    texts = [w.text for w in args]
    for k, t in enumerate(texts):
        if t in ("-t", "--target-directory") and k + 1 < len(args):
            return [(EDIT, args[k + 1])]
        if t.startswith("--target-directory="):
            value = t.partition("=")[2]
            return [(EDIT, Word(value, value))]
    files = _positionals(args, frozenset(("-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix", "-e")))
    return [(EDIT, files[-1])] if len(files) >= 2 and ":" not in files[-1].text.split("/")[0] else []


def _truncate(args: list[Word]) -> Writes:
    texts = [w.text for w in args]
    grows = any(t.startswith(("-s+", "--size=+")) for t in texts) or any(
        t in ("-s", "--size") and texts[k + 1 : k + 2][:1] and texts[k + 1].startswith("+") for k, t in enumerate(texts)
    )
    return [(EDIT if grows else ">", w) for w in _positionals(args, frozenset(("-s", "--size", "-r", "--reference")))]


def _shred(args: list[Word]) -> Writes:
    values = frozenset(("-n", "--iterations", "-s", "--size", "--random-source"))
    return [(">", w) for w in _positionals(args, values)]


_HOLES = r"-[a-zA-Z]*[pzc][a-zA-Z]*|--(punch-hole|zero-range|collapse-range)"


def _fallocate(args: list[Word]) -> Writes:
    """`fallocate --punch-hole|--zero-range|--collapse-range F` destroys content in place; a plain one adds."""
    if not any(re.fullmatch(_HOLES, w.text) for w in args):
        return []
    return [(">", w) for w in _positionals(args, frozenset(("-o", "--offset", "-l", "--length")))[-1:]]


def _find_prints(args: list[Word]) -> Writes:
    """`find ... -fprint F`, `-fprint0 F`, `-fls F`, `-fprintf F FORMAT`: F is created or emptied first."""
    return [
        (">", args[k + 1]) for k, w in enumerate(args[:-1]) if w.text in ("-fprint", "-fprint0", "-fls", "-fprintf")
    ]


def _script(args: list[Word]) -> Writes:
    """`script [-a] [-c CMD] FILE`: the typescript FILE (appended with -a)."""
    values = frozenset(("-c", "--command", "-t", "--timing", "-T", "-I", "--log-in", "-O", "--log-out", "-B",
                        "--log-io", "-E", "--echo", "-m", "--logging-format"))  # fmt: skip
    op = (
        ">>"
        if any(w.text in ("-a", "--append") or re.fullmatch(r"-[a-zA-Z]*a[a-zA-Z]*", w.text) for w in args)
        else ">"
    )
    return [(op, w) for w in _positionals(args, values)[:1]]


def _option_file(names: tuple[str, ...], op: str = ">") -> Callable[[list[Word]], Writes]:
    """Programs that write the file an option names: `sort -o F`, `curl -o F`, `wget -O F`, `openssl -out F`."""

    def writes(args: list[Word]) -> Writes:
        out: Writes = []
        for k, w in enumerate(args):
            if w.text in names and k + 1 < len(args):
                out.append((op, args[k + 1]))
            for name in names:
                if name.startswith("--") and w.text.startswith(name + "="):
                    value = w.text.partition("=")[2]
                    out.append((op, Word(value, value)))
        return out

    return writes


def _first_positional(op: str) -> Callable[[list[Word]], Writes]:
    return lambda args: [(op, w) for w in _positionals(args)[:1]]


WRITERS: dict[str, Callable[[list[Word]], Writes]] = {
    "tee": _tee,
    "sponge": _sponge,
    "dd": _dd,
    "sed": _in_place_sed,
    "gsed": _in_place_sed,
    "perl": _in_place_perl,
    "ruby": _in_place_perl,
    "awk": _in_place_awk,
    "gawk": _in_place_awk,
    "cp": _copy_dest,
    "mv": _copy_dest,
    "install": _copy_dest,
    "ln": _copy_dest,
    "rsync": _copy_dest,
    "truncate": _truncate,
    "shred": _shred,
    "fallocate": _fallocate,
    "ed": _first_positional(EDIT),
    "patch": _first_positional(EDIT),
    "sort": _option_file(("-o", "--output")),
    "curl": _option_file(("-o", "--output")),
    "wget": _option_file(("-O", "--output-document")),
    "openssl": _option_file(("-out",)),
    "find": _find_prints,
    "script": _script,
    "iconv": _option_file(("-o", "--output")),
    "pandoc": _option_file(("-o", "--output")),
    **dict.fromkeys(("gcc", "g++", "cc", "c++", "clang", "clang++", "gfortran", "nvcc", "ld"), _option_file(("-o",))),
    "uniq": lambda args: [(">", w) for w in _positionals(args, frozenset(("-f", "-s", "-w")))[1:2]],
}


_ENDLESS = ("/dev/zero", "/dev/urandom", "/dev/random", "/dev/null")


def emptied(inv: Invocation) -> list[Word]:
    """The files `inv` destroys the content of without deleting them, as surely as `rm` would: truncate (not
    growing), shred, fallocate --punch-hole, `dd if=/dev/zero of=F`, `cp /dev/null F`."""
    prog = inv.program
    if prog in ("truncate", "shred", "fallocate", "tee"):  # tee F...: each file holds only tee's input after
        return [w for op, w in WRITERS[prog](inv.args) if op == ">"]
    texts = [w.text for w in inv.args]
    if prog == "dd" and any(t[3:] in _ENDLESS for t in texts if t.startswith("if=")):
        return [w for _, w in _dd(inv.args)]
    if prog in ("cp", "install") and any(t in _ENDLESS for t in texts):
        return [w for _, w in _copy_dest(inv.args)]
    return []


def file_writes(inv: Invocation) -> Iterator[Invocation]:
    """One argv-less invocation per file `inv` writes through an argument, as the redirection it amounts to;
    what it writes (tee's, sponge's or dd's stdin) rides along as the invocation's stdin_text."""
    table = WRITERS.get(inv.program)
    if table is None:
        globbed = [w for op, w in inv.redirects if op in (">", ">|", "&>") and w.text.endswith("/*")]
        if globbed:  # `for f in ~/data/*; do : > "$f"; done`: every file of the directory emptied
            yield Invocation([Word("rm", "rm"), Word("-f", "-f"), *globbed], via=inv.via + ["> empties"], cwd=inv.cwd)
        return
    known = inv.stdin_text if inv.program in ("tee", "sponge", "dd") and not inv.stdin_partial else None
    if inv.program == "dd" and any(w.text.startswith("if=") for w in inv.args):
        known = None
    for op, target in table(inv.args):
        if target.text and not target.text.startswith("-"):
            yield Invocation(
                [],
                redirects=[(op, target)],
                via=inv.via + [f"{inv.program} writes"],
                cwd=inv.cwd,
                stdin_text=known if op != EDIT else None,
            )
    gone = [w for w in emptied(inv) if w.text and not w.text.startswith(("-", "/dev/"))]
    if gone:  # `truncate -s 0 ~/data/*`: every file's content is gone, as with `rm ~/data/*`
        argv = [Word("rm", "rm"), Word("-f", "-f"), *gone]
        yield Invocation(argv, env=dict(inv.env), via=inv.via + [f"{inv.program} empties"], cwd=inv.cwd)
