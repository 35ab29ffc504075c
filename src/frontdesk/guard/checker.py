"""`check(command, context) -> Verdict`: parse the command, match every rule, pick the worst verdict.

Pure: files (scripts a command runs), the taint store and the environment all come in through the
`GuardContext`, so tests pass plain data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from frontdesk.guard import rules as rules_mod
from frontdesk.guard.fetches import fetch_targets, line_taint, reads_fetched_code
from frontdesk.guard.guess import GUESSED
from frontdesk.guard.model import Decision, GuardContext, Verdict
from frontdesk.guard.named import NAMED_CHECKS
from frontdesk.guard.runs import resolve, script_of, tainted_exec
from frontdesk.guard.secrets import Secret, find_secrets, redact
from frontdesk.guard.shell import DYNAMIC, Invocation, Parsed, parse
from frontdesk.guard.shellout import cron_commands, shell_strings
from frontdesk.guard.sitechecks import job_process, misused_partition
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
_SCRIPT_DEPTH = 3  # a script that runs a script that runs a script
_STARTUP_FILES = frozenset(
    (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".bash_logout")
)


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


def _hits(
    command: str,
    ctx: GuardContext,
    ruleset: rules_mod.RuleSet,
    depth: int,
    written: Mapping[str, str] | None = None,
    own: bool = True,
) -> tuple[list[_Hit], Parsed]:
    """`own`: the text is the line's own (the line, or text it wrote): scripts it names are read from disk."""
    written = written or {}
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
    ctx = line_taint(parsed.invocations, ctx)  # curl URL > i.sh; bash i.sh: fetched on the line, then run
    hits: list[_Hit] = []
    for rule in ruleset.rules:
        if rule.check == "parse-error" and parsed.error:
            hits.append(_Hit(rule))
        elif rule.check == "secrets" and depth == 0:
            found = find_secrets(command) or _nested_secrets(command, parsed)
            if found:
                hits.append(_Hit(rule, ", ".join(sorted({f"«redacted:{s.kind}:{s.fingerprint}»" for s in found}))))
        elif rule.check == "fork-bomb" and _fork_bomb(parsed):
            hits.append(_Hit(rule))
    known = {**written, **parsed.written} if written else parsed.written
    for inv in parsed.invocations:
        guessed = next((v.partition(" ")[0] for v in inv.via if v.endswith(GUESSED)), None)
        for rule in ruleset.candidates(inv.program):
            hit = _match(rule, inv, ctx, ruleset)
            if hit is not None and guessed and hit.rule.action is Decision.DENY:
                # found in an unknown program's words: it may run them, or only print them
                detail = f"if {guessed} runs its arguments" + (f"; {hit.detail}" if hit.detail else "")
                hit = _Hit(replace(hit.rule, action=Decision.ASK), detail, hit.taint)
            if hit is not None:
                hits.append(hit)
        if depth < _SCRIPT_DEPTH and ctx.scan_scripts:
            hits.extend(_scan_script(inv, ctx, ruleset, known, depth, own))
    for path, text in parsed.written.items() if depth < _SCRIPT_DEPTH else ():
        if os.path.basename(path) in _STARTUP_FILES:  # echo CMD >> ~/.bashrc: every new shell runs it
            hits.extend(_shell_hits(text, os.path.basename(path), ctx, ruleset, depth + 1))
    return hits, parsed


def _match(rule: rules_mod.Rule, inv: Invocation, ctx: GuardContext, ruleset: rules_mod.RuleSet) -> _Hit | None:
    if rule.check == "fetch-exec":
        base = replace(rule, check=None, upstream_any=())
        if rules_mod.match(base, inv, ctx, ruleset) and reads_fetched_code(inv, set(rule.upstream_any)):
            feeders = inv.upstream + inv.stdin_from + [p for w in inv.args for p in w.subst_programs]
            return _Hit(rule, " | ".join(dict.fromkeys(feeders + [inv.program or (inv.via or ["sh"])[-1]])))
        return None
    if rule.check == "tainted-exec":
        source = tainted_exec(inv, ctx)
        return _Hit(rule, taint=source) if source else None
    if rule.check == "job-process":
        detail = job_process(inv, ctx)
        return _Hit(rule, detail) if detail else None
    if rule.check in NAMED_CHECKS:
        detail = NAMED_CHECKS[rule.check](inv)
        return _Hit(rule, detail) if detail is not None else None
    if rule.check == "slurm-test-partition":
        detail = misused_partition(inv, ctx, ruleset)
        return _Hit(rule, detail) if detail else None
    if rule.check is not None:
        return None
    return _Hit(rule) if rules_mod.match(rule, inv, ctx, ruleset) else None


def _fork_bomb(parsed: Parsed) -> bool:
    for name, body in parsed.functions.items():
        calls = len(re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", body))
        if calls >= 2 and ("|" in body or "&" in body):
            return True
    return False


def _nested_secrets(command: str, parsed: Parsed) -> list[Secret]:
    """Secrets in words the line hands to another shell (`ssh host 'mysql -pX'`, a crontab line): each nested
    command's words as that shell reads them, where they differ from the line's own text."""
    found: list[Secret] = []
    for inv in parsed.invocations:
        if inv.via and inv.argv:
            found += find_secrets(" ".join(w.text for w in inv.argv))
    for text in parsed.written.values():  # a script the line writes and runs
        found += find_secrets(text[:_SCRIPT_LIMIT])
    return found


def _scan_script(
    inv: Invocation,
    ctx: GuardContext,
    ruleset: rules_mod.RuleSet,
    written: Mapping[str, str],
    depth: int = 0,
    own: bool = True,
) -> Iterator[_Hit]:
    script = script_of(inv)
    if script is None:
        return
    kind, path = script
    full = resolve(path, ctx, inv.cwd)
    # a script this same line wrote, else the file (files only for the line's own text: reading is bounded);
    # `echo '* * * * * python3 job.py' > c; crontab c`: job.py is named by text the line wrote, so it is read
    wrote = written.get(full)
    text = wrote or (ctx.read_file(full) if own else None)
    if not text:
        return
    text = text[:_SCRIPT_LIMIT]
    name = os.path.basename(full)
    if "\0" in text:
        return  # a binary: nothing to read as a script
    if kind == "crontab":  # crontab FILE: every line's command runs later, as this user
        kind, text = "shell", cron_commands(text)
    elif text.startswith("#!"):
        # The kernel runs the file with its interpreter line, whatever its name says.
        kind = "shell" if re.match(r"#!\s*\S*/(ba|z|da|k)?sh\b|#!\s*\S*env\s+(ba|z|da|k)?sh\b", text) else "code"
    if kind == "shell":
        yield from _shell_hits(text, name, ctx, ruleset, depth + 1, written, own=own and wrote is not None)
        if inv.program == "sbatch":
            detail = misused_partition(inv, ctx, ruleset, script_text=text)
            rule = next((r for r in ruleset.rules if r.check == "slurm-test-partition"), None)
            if detail and rule is not None:
                yield _Hit(rule, f"in {name}: {detail}")
        return
    inner = shell_strings(text)  # a script in another language: the shell commands it hands on, as -c code does
    if inner:
        yield from _shell_hits("\n".join(inner), name, ctx, ruleset, depth + 1, written)
    for rule in ruleset.rules:
        if (
            rule.code_regex is not None
            and rule.code_scope in ("script", "both")
            and rules_mod.rx(rule.code_regex).search(text)
        ):
            yield _Hit(rule, f"in {name}")


def _shell_hits(
    text: str,
    name: str,
    ctx: GuardContext,
    ruleset: rules_mod.RuleSet,
    depth: int = 1,
    written: Mapping[str, str] | None = None,
    own: bool = False,
) -> Iterator[_Hit]:
    """What a shell script's text would do, each hit naming the script (scripts it runs in turn are read
    while `depth` allows: `echo 'bash job.sh' > x.sh; bash x.sh`)."""
    sub_hits, _ = _hits(text, ctx, ruleset, depth, written, own)
    for hit in sub_hits:
        if hit.rule.id != "parse.error" or own:  # text the line wrote itself that bash cannot read: ask
            yield _Hit(hit.rule, f"in {name}" + (f": {hit.detail}" if hit.detail else ""), hit.taint)
