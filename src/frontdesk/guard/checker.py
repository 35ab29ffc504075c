"""`check(command, context) -> Verdict`: parse the command, match every rule, pick the worst verdict.

Pure: files (scripts a command runs), the taint store and the environment all come in through the
`GuardContext`, so tests pass plain data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from frontdesk.durations import parse_slurm_clock
from frontdesk.guard import rules as rules_mod
from frontdesk.guard.model import Decision, GuardContext, Verdict
from frontdesk.guard.named import NAMED_CHECKS
from frontdesk.guard.secrets import find_secrets, redact
from frontdesk.guard.shell import DYNAMIC, Invocation, Parsed, parse
from frontdesk.guard.taint import JOB_OUTPUT

__all__ = ["check", "fetch_targets", "RUNTIME_VARS"]

# Set by the scheduler or the shell at run time: known to exist, value unknown here.
RUNTIME_VARS = (
    "SLURM_JOB_ID",
    "SLURM_TMPDIR",
    "SLURM_SUBMIT_DIR",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_PROCID",
    "SLURM_CPUS_PER_TASK",
    "SLURM_NTASKS",
    "SLURM_JOB_NAME",
    "SLURM_NODELIST",
    "TMPDIR",
    "PWD",
    "OLDPWD",
    "RANDOM",
    "LINENO",
    "SECONDS",
    "BASH_SOURCE",
    "HOSTNAME",
    "UID",
    "EUID",
    "PPID",
    "FRONTDESK_JOB_ID",
    "FRONTDESK_WORKDIR",
    "JOB_TMPDIR",
    "PBS_JOBID",
    "PBS_O_WORKDIR",
)
_SCRIPT_LIMIT = 256 * 1024
_STARTUP_FILES = frozenset(
    (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".bash_logout")
)
_SHELL_RUNNERS = {"bash", "sh", "zsh", "dash", "ksh", "source", ".", "sbatch"}
_CODE_RUNNERS = r"^(python[0-9.]*|perl|ruby|node|Rscript|julia|php)$"
_INSTALLERS = {
    "pip",
    "pip3",
    "uv",
    "pipx",
    "conda",
    "mamba",
    "npm",
    "yarn",
    "pnpm",
    "cargo",
    "go",
    "make",
    "cmake",
}


@dataclass
class _Hit:
    rule: rules_mod.Rule
    detail: str = ""
    taint: str | None = None


def check(command: str, context: GuardContext | None = None) -> Verdict:
    """The guard's verdict on one shell command line."""
    ctx = context or GuardContext()
    ruleset = ctx.rules or rules_mod.default_rules()
    hits, parsed = _hits(command, ctx, ruleset, depth=0)
    fetches = tuple(t for inv in parsed.invocations for t in fetch_targets(inv))
    traced = ctx.taint_text(command)
    if not hits:
        if traced and traced.startswith(JOB_OUTPUT):  # issue 19: copied out of a job's (untrusted) output
            reason = f"command text copied from the {traced} (untrusted program output); confirm it is yours"
            return Verdict(Decision.ASK, "copied-from-job-output", reason, None, ("copied-from-job-output",), traced)
        return Verdict(Decision.ALLOW, taint_source=traced, fetches=fetches)
    worst = max(hits, key=lambda h: h.rule.action.rank)  # max keeps the first of equal rank
    reason = worst.rule.reason + (f": {worst.detail}" if worst.detail else "")
    taint = worst.taint or next((h.taint for h in hits if h.taint), None)
    if taint:
        reason += f" (from {taint})"
    if traced:
        reason += f" (command text found in {traced})"
    reason = " ".join(redact(reason).split())[:300]
    return Verdict(
        worst.rule.action,
        worst.rule.id,
        reason,
        worst.rule.alternative,
        tuple(dict.fromkeys(h.rule.id for h in hits)),
        traced or taint,
        fetches,
    )


def _env_for(ctx: GuardContext) -> dict[str, str] | None:
    if ctx.env is None:
        return None
    env = dict(ctx.env)
    for name in RUNTIME_VARS:
        env.setdefault(name, DYNAMIC)
    return env


def _hits(command: str, ctx: GuardContext, ruleset: rules_mod.RuleSet, depth: int) -> tuple[list[_Hit], Parsed]:
    env = _env_for(ctx)
    parsed = parse(command, env, ctx.cwd, ctx.env_complete)
    if parsed.error:
        # Only a quote left open at the end? bash refuses that command, so it is no reason to ask; the line
        # with the quote closed shows every word (`echo "$(rm -rf ~)` is still denied).
        for tail in ("'", '"'):
            closed = parse(command + tail, env, ctx.cwd, ctx.env_complete)
            if not closed.error:
                parsed = closed
                break
    hits: list[_Hit] = []
    for rule in ruleset.rules:
        if rule.check == "parse-error" and parsed.error:
            hits.append(_Hit(rule))
        elif rule.check == "secrets" and depth == 0:
            found = find_secrets(command)
            if found:
                hits.append(_Hit(rule, ", ".join(sorted({f"«redacted:{s.kind}:{s.fingerprint}»" for s in found}))))
        elif rule.check == "fork-bomb" and _fork_bomb(parsed):
            hits.append(_Hit(rule))
    for inv in parsed.invocations:
        for rule in ruleset.candidates(inv.program):
            hit = _match(rule, inv, ctx, ruleset)
            if hit is not None:
                hits.append(hit)
        if depth == 0 and ctx.scan_scripts:
            hits.extend(_scan_script(inv, ctx, ruleset, parsed.written))
    for path, text in parsed.written.items() if depth == 0 else ():
        if os.path.basename(path) in _STARTUP_FILES:  # echo CMD >> ~/.bashrc: every new shell runs it
            hits.extend(_shell_hits(text, os.path.basename(path), ctx, ruleset))
    return hits, parsed


def _match(rule: rules_mod.Rule, inv: Invocation, ctx: GuardContext, ruleset: rules_mod.RuleSet) -> _Hit | None:
    if rule.check == "fetch-exec":
        base = replace(rule, check=None, upstream_any=())
        if rules_mod.match(base, inv, ctx, ruleset) and _reads_fetched_code(inv, set(rule.upstream_any)):
            feeders = inv.upstream + inv.stdin_from + [p for w in inv.args for p in w.subst_programs]
            return _Hit(rule, " | ".join(dict.fromkeys(feeders + [inv.program or (inv.via or ["sh"])[-1]])))
        return None
    if rule.check == "tainted-exec":
        source = _tainted_exec(inv, ctx)
        return _Hit(rule, taint=source) if source else None
    if rule.check == "job-process":
        detail = _job_process(inv, ctx)
        return _Hit(rule, detail) if detail else None
    if rule.check in NAMED_CHECKS:
        detail = NAMED_CHECKS[rule.check](inv)
        return _Hit(rule, detail) if detail is not None else None
    if rule.check == "slurm-test-partition":
        detail = _test_partition(inv, ctx, ruleset)
        return _Hit(rule, detail) if detail else None
    if rule.check is not None:
        return None
    return _Hit(rule) if rules_mod.match(rule, inv, ctx, ruleset) else None


# -- named checks -----------------------------------------------------------------------------------
def _job_process(inv: Invocation, ctx: GuardContext) -> str | None:
    """`kill PID` where PID runs a frontdesk job (not this session's own) or another user's process."""
    if inv.program != "kill":
        return None
    words = [w.text for w in inv.args if not w.dynamic]
    pids: list[int] = []
    options = True
    for k, t in enumerate(words):
        if options and t == "--":
            options = False
        elif options and k and words[k - 1] in ("-s", "-n", "--signal"):
            continue  # a signal name or number
        elif t.isdigit() or (t[:1] == "-" and t[1:].isdigit() and (k or not options)):
            pids.append(int(t.lstrip("-")))  # `kill -- -PGID`, `kill -9 -PGID`: the group's leader
    return next((d for d in map(ctx.process_info, [p for p in pids if p > 1][:16]) if d), None)


def _fork_bomb(parsed: Parsed) -> bool:
    for name, body in parsed.functions.items():
        calls = len(re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", body))
        if calls >= 2 and ("|" in body or "&" in body):
            return True
    return False


def _reads_fetched_code(inv: Invocation, fetchers: set[str]) -> bool:
    prog = inv.program
    fed = set(inv.upstream) | set(inv.stdin_from)
    subst = {p for w in inv.args for p in w.subst_programs}
    if not (fed | subst) & fetchers:
        return False
    if prog == "eval" or (not inv.argv and inv.via and inv.via[-1] in ("eval", "bash -c", "sh -c")):
        return True
    if prog in ("source", "."):
        return True
    positional = [w for w in inv.args if not w.is_flag]
    if prog in ("bash", "sh", "zsh", "dash", "ksh", "fish") or rules_mod.rx(_CODE_RUNNERS).match(prog):
        if inv.inline_code is not None or any(
            w.is_flag and not w.text.startswith("--") and ("c" in w.text or "e" in w.text) for w in inv.args
        ):
            return bool(subst & fetchers)
        if not positional or positional[0].text in ("-", "/dev/stdin"):
            return bool(fed & fetchers)
        return bool(set(inv.stdin_from) & fetchers) and positional[0].text == "/dev/fd/63"
    return False


def _script_of(inv: Invocation) -> tuple[str, str] | None:
    """(kind, path) of a script the invocation runs: kind 'shell' or 'code'."""
    prog = inv.program
    if not inv.argv:
        return None
    positional = [w for w in inv.args if not w.is_flag]
    if prog in _SHELL_RUNNERS and positional and inv.inline_code is None:
        return ("shell", positional[0].text)
    if rules_mod.rx(_CODE_RUNNERS).match(prog) and inv.inline_code is None and positional and not inv.module:
        if "-m" in [w.text for w in inv.args]:
            return None
        return ("code", positional[0].text)
    argv0 = inv.argv[0].text
    if "/" in argv0 and not argv0.startswith(("/usr/", "/bin/", "/sbin/", "/opt/")):
        return (
            "shell" if argv0.endswith((".sh", ".bash")) or "." not in os.path.basename(argv0) else "code",
            argv0,
        )
    return None


def _resolve(path: str, ctx: GuardContext, cwd: str | None) -> str:
    if path.startswith("~"):
        path = ctx.home + path[1:]
    return os.path.normpath(os.path.join(cwd or ctx.cwd, path))


def _scan_script(
    inv: Invocation, ctx: GuardContext, ruleset: rules_mod.RuleSet, written: Mapping[str, str]
) -> Iterator[_Hit]:
    script = _script_of(inv)
    if script is None:
        return
    kind, path = script
    full = _resolve(path, ctx, inv.cwd)
    text = written.get(full) or ctx.read_file(full)  # a script this same line wrote, else the file
    if not text:
        return
    text = text[:_SCRIPT_LIMIT]
    name = os.path.basename(full)
    if "\0" in text:
        return  # a binary: nothing to read as a script
    if text.startswith("#!"):
        # The kernel runs the file with its interpreter line, whatever its name says.
        kind = "shell" if re.match(r"#!\s*\S*/(ba|z|da|k)?sh\b|#!\s*\S*env\s+(ba|z|da|k)?sh\b", text) else "code"
    if kind == "shell":
        yield from _shell_hits(text, name, ctx, ruleset)
        if inv.program == "sbatch":
            detail = _test_partition(inv, ctx, ruleset, script_text=text)
            rule = next((r for r in ruleset.rules if r.check == "slurm-test-partition"), None)
            if detail and rule is not None:
                yield _Hit(rule, f"in {name}: {detail}")
        return
    for rule in ruleset.rules:
        if (
            rule.code_regex is not None
            and rule.code_scope in ("script", "both")
            and rules_mod.rx(rule.code_regex).search(text)
        ):
            yield _Hit(rule, f"in {name}")


def _shell_hits(text: str, name: str, ctx: GuardContext, ruleset: rules_mod.RuleSet) -> Iterator[_Hit]:
    """What a shell script's text would do, each hit naming the script."""
    sub_hits, _ = _hits(text, replace(ctx, scan_scripts=False), ruleset, depth=1)
    for hit in sub_hits:
        if hit.rule.id != "parse.error":
            yield _Hit(hit.rule, f"in {name}" + (f": {hit.detail}" if hit.detail else ""), hit.taint)


def _walltime_s(text: str) -> int | None:
    try:
        return int(parse_slurm_clock(text))  # sbatch's --time rules
    except ValueError:
        return None


def _test_partition(
    inv: Invocation, ctx: GuardContext, ruleset: rules_mod.RuleSet, script_text: str | None = None
) -> str | None:
    if inv.program not in ("sbatch", "srun", "salloc") or not ctx.partitions:
        return None
    flags, _ = rules_mod.flags_of(inv, ruleset)
    if script_text:
        for line in script_text.splitlines():
            if line.startswith("#SBATCH"):
                fake = parse("sbatch " + line[len("#SBATCH") :], None).invocations
                if fake:
                    for k, v in rules_mod.flags_of(fake[0], ruleset)[0].items():
                        flags.setdefault(k, v)

    def first(name: str) -> str | None:
        values = [v for v in flags.get(name, []) if v]
        return values[0] if values else None

    part_name = first("partition")
    if part_name is None:
        return None
    for name in part_name.split(","):
        part = ctx.partitions.get(name)
        if part is None or part.purpose not in ("test", "debug", "interactive", "development"):
            continue
        wall = _walltime_s(first("time") or "")
        nodes = first("nodes")
        if "array" in flags and first("array"):
            return f"job array on the {part.purpose} partition {name}"
        if part.max_time_s and wall and wall > part.max_time_s:
            limit = part.max_time_s // 60
            return f"{wall // 60} min on the {part.purpose} partition {name} (meant for ≤{limit} min)"
        if part.max_nodes and nodes and nodes.split("-")[-1].isdigit() and int(nodes.split("-")[-1]) > part.max_nodes:
            return f"{nodes} nodes on the {part.purpose} partition {name}"
    return None


# -- taint ------------------------------------------------------------------------------------------
def _tainted_exec(inv: Invocation, ctx: GuardContext) -> str | None:
    prog = inv.program
    candidates: list[str] = []
    script = _script_of(inv)
    if script is not None:
        candidates.append(script[1])
    positional = [w for w in inv.args if not w.is_flag]
    if prog in _INSTALLERS:
        if positional and positional[0].text == "install":
            candidates += [w.text for w in positional[1:] if "/" in w.text or w.text == "."]
        texts = [w.text for w in inv.args]
        for flag in ("-e", "--editable", "-r", "--requirement"):
            if flag in texts and texts.index(flag) + 1 < len(texts):
                candidates.append(texts[texts.index(flag) + 1])
        if prog in ("make", "cmake", "cargo", "go") or (positional and positional[0].text in ("install", "build")):
            candidates.append(".")
    if prog.startswith("python") and positional and positional[0].text == "setup.py":
        candidates.append(".")
    for path in candidates:
        source = ctx.tainted(_resolve(path, ctx, inv.cwd))
        if source:
            return source
    return None


def fetch_targets(inv: Invocation) -> Iterator[tuple[str, str]]:
    """(path, source URL) pairs this invocation will write with content from outside (relative paths)."""
    prog = inv.program
    args = [w.text for w in inv.args]
    urls = [a for a in args if re.match(r"^(https?|ftp|git|ssh)://|^git@|^[\w.-]+@[\w.-]+:", a)]
    if prog == "git" and "clone" in args:
        rest: list[str] = []
        skip = False
        for a in args[args.index("clone") + 1 :]:
            if skip:
                skip = False
            elif a in (
                "--depth",
                "-b",
                "--branch",
                "-o",
                "--origin",
                "-c",
                "--config",
                "--reference",
                "-j",
                "--jobs",
                "--separate-git-dir",
                "--template",
                "-u",
                "--upload-pack",
                "--shallow-since",
            ):
                skip = True
            elif not a.startswith("-"):
                rest.append(a)
        if rest:
            url = rest[0]
            dest = (
                rest[1] if len(rest) > 1 else re.sub(r"\.git$", "", url.rstrip("/").rsplit("/", 1)[-1].split(":")[-1])
            )
            yield (_abs(dest, inv.cwd), url)
    elif prog == "curl" and urls:
        for flag in ("-o", "--output"):
            if flag in args and args.index(flag) + 1 < len(args):
                yield (_abs(args[args.index(flag) + 1], inv.cwd), urls[0])
        if "-O" in args or "--remote-name" in args or any(re.match(r"^-[a-zA-Z]*O[a-zA-Z]*$", a) for a in args):
            yield (_abs(urls[0].split("?")[0].rstrip("/").rsplit("/", 1)[-1], inv.cwd), urls[0])
    elif prog == "wget" and urls:
        if "-O" in args and args.index("-O") + 1 < len(args) and args[args.index("-O") + 1] != "-":
            yield (_abs(args[args.index("-O") + 1], inv.cwd), urls[0])
        elif "-O" not in args and "-qO-" not in args:
            prefix = args[args.index("-P") + 1] if "-P" in args and args.index("-P") + 1 < len(args) else "."
            yield (
                _abs(os.path.join(prefix, urls[0].split("?")[0].rstrip("/").rsplit("/", 1)[-1]), inv.cwd),
                urls[0],
            )
    elif prog in ("pip", "pip3") and args[:1] == ["download"]:
        dest = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else "."
        yield (
            _abs(dest, inv.cwd),
            "pip download " + " ".join(a for a in args[1:] if not a.startswith("-"))[:80],
        )
    for op, w in inv.redirects:
        if op in (">", ">>") and prog in ("curl", "wget") and urls:
            yield (_abs(w.text, inv.cwd), urls[0])


def _abs(path: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd or "/", os.path.expanduser(path)))
