"""What a lesson remembers about the job it came from: template, application, modules, request, conditions.

Pure: works on the JSON form of a JobSpec (what the gateway stores) so that the same code serves the
admission of a new spec and the report of an ended job.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "JobContext",
    "argument_change",
    "context_of",
    "fix_applied",
    "request_changes",
    "scrub_private",
    "template_of",
]

_HOME = re.compile(r"(?<![\w.])(?:/home|/Users|/u|/usr/home|/export/home)/[^/\s'\"]+")
_MODULE_LOAD = re.compile(r"^\s*(?:module\s+(?:load|add|try-load)|ml)\s+([^\n#;&|]+)", re.M)
_INTERPRETERS = {
    "python",
    "python3",
    "bash",
    "sh",
    "srun",
    "mpirun",
    "mpiexec",
    "env",
    "time",
    "apptainer",
    "singularity",
    "torchrun",
    "accelerate",
    "Rscript",
    "julia",
    "uv",
    "conda",
    "exec",
    "numactl",
}
_SHELL_SETUP = ("cd", "set", "source", ".", "export", "echo", "conda", "ulimit")
_REQUEST_KEYS = ("memory_bytes", "cpus", "gpus", "walltime_s", "partition", "gpu_types", "modules")


def scrub_private(text: str) -> str:
    """Home directories replaced by `~` (private paths must not travel with a shared lesson)."""
    return _HOME.sub("~", text)


_DIRECTIVE = re.compile(r"^\s*#(?:SBATCH|PBS|\$|BSUB)\b.*$", re.M)
_VOLATILE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b\d{4}-?\d{2}-?\d{2}(?:[T_ -]?\d{2}[:-]?\d{2}(?:[:-]?\d{2})?(?:\.\d+)?)?Z?\b"), "<time>"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b", re.I), "<hex>"),
    (re.compile(r"(?<![\d.])\d{6,}(?![\d.])"), "<id>"),
]


_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")
_PYTHON_FLAGS = {"-u", "-B", "-O", "-OO", "-s", "-E", "-q"}
"""Interpreter flags that do not change what runs (unbuffered output, no .pyc, ...)."""
_VARYING = re.compile(
    r"^--?(?:seed|random[-_]?seed|(?:master[-_]?)?port|run[-_]?(?:name|id)|exp(?:eriment)?[-_]?name|"
    r"wandb[-_]?(?:name|run[-_]?id)|job[-_]?id|tag)$",
    re.I,
)
"""Options whose values vary from run to run without making another job: seeds, ports, run names."""
_SCRIPT_LIMIT = 400


def _command_words(words: list[str], workdir: str | None) -> list[str]:
    """A command line normalised: `python3 -u ./x.py --seed 7` and `python /job/dir/x.py --seed 8` agree."""
    base_dir = (workdir or "").rstrip("/")
    out: list[str] = []
    in_python = skip = False
    for word in words:
        if skip:
            out.append("<v>")
            skip = False
            continue
        if _PYTHON.match(word.rsplit("/", 1)[-1]):
            out.append("python")
            in_python = True
            continue
        if in_python and word in _PYTHON_FLAGS:
            continue
        in_python = in_python and word.startswith("-")
        key, eq, _value = word.partition("=")
        if _VARYING.match(key):
            out.append(f"{key}=<v>" if eq else word)
            skip = not eq
            continue
        if base_dir and word.startswith(base_dir + "/"):
            word = word[len(base_dir) + 1 :]  # a path under the job's directory: as if relative
        out.append(word[2:] if word.startswith("./") else word)
    return out


def template_of(spec: dict[str, Any], workdir: str | None = None) -> str:
    """`JobSpec.template()` normalised, so reruns of one job share it.

    Commands: interpreter aliases (`python3`, a venv's `python`) become `python`, flags such as `-u`
    go, paths under the job's directory become relative (`./x.py`, `/job/x.py` and `x.py` agree) and
    seeds, ports and run names become `<v>`. Home directories fold to `~`; run ids, timestamps, hashes
    and long numbers become placeholders (small numbers such as hyperparameters stay: they change what
    runs). In scripts, scheduler directives and `module load` lines are left out (they are the request,
    and a change to them is a candidate fix rather than another job); a long script is known by the
    SHA-256 of its normalised text.
    """
    if spec.get("command"):
        cmd = spec["command"]
        words = [str(w) for w in cmd] if isinstance(cmd, list) else str(cmd).split()
        text = " ".join(_command_words(words, spec.get("workdir") or workdir))
    else:
        text = _MODULE_LOAD.sub("", _DIRECTIVE.sub("", str(spec.get("script") or "")))
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    text = scrub_private(" ".join(text.split()))
    if len(text) > _SCRIPT_LIMIT:
        import hashlib

        text = f"{text[:_SCRIPT_LIMIT]} ... sha256:{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    return text


def _application(spec: dict[str, Any]) -> str:
    words: list[str] = []
    if spec.get("command"):
        cmd = spec["command"]
        words = list(cmd) if isinstance(cmd, list) else str(cmd).split()
    elif spec.get("script"):
        for line in str(spec["script"]).splitlines():
            line = line.strip()
            if not line or line.startswith("#") or _MODULE_LOAD.match(line) or "=" in line.split()[0]:
                continue
            if True:
                try:
                    words = shlex.split(line)
                except ValueError:
                    words = line.split()
                if words and words[0] not in _SHELL_SETUP:
                    break
    candidates = []
    for w in words:
        base = w.rsplit("/", 1)[-1]
        if (
            not base
            or base.startswith("-")
            or base.isdigit()
            or re.match(r"^python[\d.]*$", base)
            or base in _INTERPRETERS
        ):
            continue
        candidates.append((w, base))
    for w, base in candidates:  # a file or path names the program better than an option's value
        if "/" in w or "." in base:
            return base[:100]
    if candidates:
        return candidates[0][1][:100]
    return (words[0].rsplit("/", 1)[-1] if words else "")[:100]


def _modules(spec: dict[str, Any], env: dict[str, str] | None) -> list[str]:
    found: list[str] = []
    for m in _MODULE_LOAD.finditer(str(spec.get("script") or "")):
        found += [w for w in m.group(1).split() if not w.startswith("-")]
    for source in (spec.get("env") or {}, env or {}):
        loaded = source.get("LOADEDMODULES")
        if loaded:
            found += [m for m in str(loaded).split(":") if m]
    return sorted(set(found))


@dataclass(frozen=True)
class JobContext:
    """The context of one job as lessons record and match it."""

    template: str
    application: str
    modules: list[str] = field(default_factory=list)
    partition: str | None = None
    requested: dict[str, Any] = field(default_factory=dict)
    workdir: str | None = None

    @property
    def conditions(self) -> dict[str, Any]:
        """What a lesson learned from this job was true under: software versions, partition."""
        versions = {m.split("/", 1)[0]: m.split("/", 1)[1] for m in self.modules if "/" in m}
        return {"versions": versions, "partition": self.partition}


def context_of(
    spec: dict[str, Any], partition: str | None = None, env: dict[str, str] | None = None, workdir: str | None = None
) -> JobContext:
    """The context of a job from its spec's JSON form (and, when known, its partition and submit env)."""
    res = spec.get("resources") or {}
    gpu = res.get("gpu") or {}
    modules = _modules(spec, env)
    part = partition or spec.get("pool")
    requested = {
        "memory_bytes": res.get("memory"),
        "cpus": res.get("cpus", 1),
        "gpus": res.get("gpus", 0),
        "walltime_s": res.get("walltime"),
        "partition": part,
        "gpu_types": sorted(gpu.get("type") or []),
        "modules": modules,
    }
    return JobContext(
        template=template_of(spec, workdir),
        application=_application(spec),
        modules=modules,
        partition=part,
        requested=requested,
        workdir=spec.get("workdir") or workdir,
    )


def request_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """What changed between two requests: {key: [before, after]} (the candidate fix)."""
    return {k: [before.get(k), after.get(k)] for k in _REQUEST_KEYS if before.get(k) != after.get(k)}


def _words(template: str) -> list[str]:
    try:
        return shlex.split(template)
    except ValueError:
        return template.split()


def argument_change(before: str, after: str, max_words: int = 3) -> tuple[str, str] | None:
    """The few words that differ between two command templates (with the option they belong to).

    None when the templates differ in more than `max_words` words on either side: then they are
    different jobs rather than one job with an adjusted argument.
    """
    import difflib

    a, b = _words(before), _words(after)
    if not a or not b or a[0] != b[0]:
        return None
    old: list[str] = []
    new: list[str] = []
    removed = added = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        flag = [a[i1 - 1]] if i1 > 0 and a[i1 - 1].startswith("-") else []
        old += flag + a[i1:i2]
        new += flag + b[j1:j2]
        removed, added = removed + i2 - i1, added + j2 - j1
    if not (removed or added) or max(removed, added) > max_words:
        return None
    return " ".join(old), " ".join(new)


def fix_applied(fix_changes: dict[str, list[Any]], request: dict[str, Any], template: str | None = None) -> bool:
    """Whether a request carries a fix: every value the fix changed moved away from where it failed."""
    for key, (old, new) in fix_changes.items():
        if key == "arguments":  # the fix was another command line: [failed template, completed template]
            if template is None or template == old:
                return False
            continue
        value = request.get(key)
        if isinstance(new, int | float) and not isinstance(new, bool) and isinstance(old, int | float):
            if value is None:
                ok = key in ("memory_bytes", "walltime_s")  # no limit at all is more than any limit
            else:
                ok = value > old if new > old else value < old
        else:
            ok = value != old
        if not ok:
            return False
    return True
