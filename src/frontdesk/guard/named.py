"""Named per-command checks of the second pass (rules.toml `check = "..."`): obfuscated names, code run from a
pipe, secrets echoed. Pure functions of one invocation; each returns a detail for the reason, or None."""

from __future__ import annotations

import re
from collections.abc import Callable

from frontdesk.guard.words import SHELLS, Invocation

__all__ = ["NAMED_CHECKS"]

_RUNS_STDIN = re.compile(r"^(bash|sh|zsh|dash|ksh|ash|fish|source|\.|python[0-9.]*|perl|ruby|node|php|Rscript)$")
_IFS = re.compile(r"\$\{?IFS\b")
_HIDDEN_NAME = re.compile(r"^[^'\"]*[?*\[]|\$'[^']*\\[x0-7u]|\$\{\w+:\s*-?\d")
# Programs whose output a shell sources at start-up (`source <(conda shell.bash hook)`): not stdin-exec.
_SHELL_INIT = frozenset(
    "conda mamba micromamba pyenv rbenv nodenv direnv kubectl helm gh uv pixi starship zoxide fzf poetry pip "
    "npm register-python-argcomplete ssh-agent brew mise rtx asdf spack module lmod".split()
)
_SECRET_VAR = re.compile(
    r"(?i)\$\{?(?!#)\w*(secret|token|passw|api_?key|private_?key|access_?key|credential)\w*(?![:}]*\+)"
)
_SECRET_NAME = re.compile(r"(?i)^\w*(secret|token|passw|api_?key|private_?key|access_?key|credential)\w*$")


def obfuscated(inv: Invocation) -> str | None:
    """`cat${IFS}/etc/passwd`, `/???/??t`, `$'\\x63at'`, `${a:0:4}`, look-alike letters in the program name."""
    if not inv.argv:
        return "IFS reassigned" if "IFS" in inv.env else None
    if any(_IFS.search(w.raw) for w in inv.argv):
        return "$IFS used as a word separator"
    if "IFS" in inv.env and inv.program not in ("read", "mapfile", "readarray"):  # `IFS= read -r f`: read's own
        return "IFS reassigned"
    name = inv.argv[0]
    if _HIDDEN_NAME.search(name.raw):
        return f"program name {name.raw[:40]!r}"
    head, blank, _ = name.text.strip().partition(" ")
    if blank and "/" not in head and name.raw != name.text.strip():  # `rm\ -rf\ /`, "rm -rf /": one word
        return f"a command line escaped into one program name {name.text[:40]!r}"
    if not name.text.isascii() and any(ch.isalpha() and not ch.isascii() for ch in name.text):
        return f"non-ASCII letters in the program name {name.text[:40]!r}"
    return None


def stdin_exec(inv: Invocation) -> str | None:
    """`X | bash`, `X | python3 -`, `bash <(X)`: code from a pipe whose text the line does not show."""
    prog = inv.program
    if not _RUNS_STDIN.match(prog) or inv.inline_code is not None and not inv.stdin_partial:
        return None
    if inv.stdin_text is not None and not inv.stdin_partial:
        return None
    positional = [w for w in inv.args if not w.is_flag or w.text in ("-", "-s")]
    if any(w.is_flag and w.text.startswith("-") and "c" in w.text.lstrip("-")[:3] for w in inv.args[:1]):
        return None
    if prog in ("source", ".") or positional and positional[0].text == "/dev/fd/63":
        feeders = [p for p in inv.stdin_from if p not in _SHELL_INIT]
    elif not positional or positional[0].text in ("-", "-s", "/dev/stdin"):
        feeders = inv.upstream + inv.stdin_from
    else:
        return None
    return f"{' | '.join(dict.fromkeys(feeders))} | {prog}" if feeders else None


def secret_echo(inv: Invocation) -> str | None:
    """`echo $AWS_SECRET_ACCESS_KEY`, `printenv GITHUB_TOKEN` (a set/length test like `${X:+set}` is fine)."""
    if inv.program in ("echo", "printf"):
        hit = next((w.raw for w in inv.args if _SECRET_VAR.search(w.raw)), None)
    elif inv.program == "printenv":
        hit = next((w.text for w in inv.args if _SECRET_NAME.match(w.text)), None)
    else:
        return None
    return hit[:60] if hit else None


def dynamic_eval(inv: Invocation) -> str | None:
    """`eval $CMD`, `eval "$@"`: code from a variable; `eval "$(ssh-agent -s)"` runs a known program (checked)."""
    args = inv.args
    if inv.program in SHELLS:  # bash -c "$CODE": as eval "$CODE" (x=$(curl URL); bash -c "$x")
        at = next((k for k, w in enumerate(args) if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", w.text)), None)
        code = args[at + 1 : at + 2] if at is not None else []
        args = [w for w in code if re.fullmatch(r'"?\$\{?\w+\}?"?', w.raw)]  # the code is a variable
    elif inv.program != "eval":
        return None
    for w in args:
        if (w.dynamic or w.unset_vars) and not w.subst_programs and "$" in w.raw:
            return w.raw[:40]
    return None


_UPLOAD_STDIN = re.compile(
    r"(^| )(-d|--data(-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file|--post-file|--body-file)[= ]?(\S*=)?@?-( |$)"
)


def stdin_upload(inv: Invocation) -> str | None:
    """`X | curl -d @- URL`: uploads stdin; fine when the line shows that text (a heredoc with no expansions)."""
    if not _UPLOAD_STDIN.search(" ".join(w.text for w in inv.args)):
        return None
    if inv.stdin_text is not None and not inv.stdin_partial and not re.search(r"\$[({\w]|`", inv.stdin_text):
        return None
    return " | ".join([*dict.fromkeys(inv.upstream + inv.stdin_from), inv.program])


_ENDLESS = ("/dev/zero", "/dev/urandom", "/dev/random")


def disk_fill(inv: Invocation) -> str | None:
    """`yes > FILE`, `cat /dev/zero > FILE`, `dd if=/dev/zero of=FILE` with no count: a file that never ends."""
    prog = inv.program
    written = [w.text for op, w in inv.redirects if op in (">", ">>", ">|", "&>", "&>>") and w.text]
    written = [t for t in written if not t.startswith("/dev/")]  # devices: disk.wipe; /dev/null is harmless
    texts = [w.text for w in inv.args]
    if prog == "yes" and written:
        return f"yes > {written[0]}"
    if prog in ("cat", "pv", "tail") and written and any(t in _ENDLESS for t in texts):
        return f"{prog} {next(t for t in texts if t in _ENDLESS)} > {written[0]}"
    if prog == "dd" and not any(t.startswith("count=") for t in texts):
        source = next((t[3:] for t in texts if t.startswith("if=")), None)
        target = next((t[3:] for t in texts if t.startswith("of=")), None) or (written[0] if written else None)
        if source in _ENDLESS and target and not target.startswith("/dev/"):
            return f"dd if={source} of={target} with no count="
    return None


NAMED_CHECKS: dict[str, Callable[[Invocation], str | None]] = {
    "obfuscated": obfuscated,
    "stdin-exec": stdin_exec,
    "secret-echo": secret_echo,
    "dynamic-eval": dynamic_eval,
    "disk-fill": disk_fill,
    "stdin-upload": stdin_upload,
}
