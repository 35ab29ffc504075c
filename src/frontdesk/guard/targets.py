"""Which kinds of target one path argument is: root, system, home, scratch root, credentials, .git ...

Paths are resolved against the command's working directory; nothing here touches the filesystem.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache

from frontdesk.guard.model import GuardContext
from frontdesk.guard.words import Word

__all__ = ["TARGETS", "classify_path", "under"]

TARGETS = (
    "unset-var", "root", "system", "home", "shared", "dev-shm", "scratch", "device", "agent-config",
    "scratch-root", "credentials", "git-dir", "other-home", "project-root", "env-prefix", "outside", "gpu-device",
    "startup-file",
)  # fmt: skip


@lru_cache(maxsize=64)
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_SYSTEM_TOP = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/opt",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
    "/srv",
    "/root",
    "/run",
    "/snap",
)
_SYSTEM_DEEP = (
    "/etc/",
    "/boot/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/lib64/",
    "/usr/bin/",
    "/usr/lib/",
    "/usr/sbin/",
    "/proc/",
    "/sys/",
)
# Any device node but the harmless ones: a name the guard does not know (`/dev/fd-does-not-exist`,
# `/dev/dm-3`, `/dev/rbd0`) is treated as a disk rather than let through.
_DEVICE = (
    r"^/dev/(?!(null|zero|full|u?random|stdin|stdout|stderr|tty\d*|console|ptmx|pts/|fd/\d|shm(/|$)|"
    r"tcp/|udp/|nvidia|dri/|kfd$|infiniband/|mqueue/|hugepages/)).+"
)
_AGENT_CONFIG = (
    r"(^|/)\.claude/(settings(\.local)?\.json|hooks(/|$))|(^|/)\.codex/(config\.toml|hooks\.json)$|"
    r"(^|/)frontdesk\.toml$|(^|/)\.gemini/settings\.json$|(^|/)\.config/frontdesk/|"
    r"(^|/)\.claude\.json$|"
    r"(^|/)\.(claude|codex)/?$|(^|/)\.config/frontdesk/?$"  # the folders that hold them
)


_CREDENTIALS = (
    r"/\.(ssh|gnupg|aws)$|/\.ssh/(id_(?![^/]*\.pub$)[a-z0-9*?]+|[^/]*_key|[^/]*\.pem|authorized_keys2?)$|/\.gnupg/|/\.aws/credentials$|/\.netrc$|"
    r"/\.codex/auth\.json$|/\.claude/\.credentials\.json$|/\.config/gh/hosts\.ya?ml$|/\.git-credentials$|"
    r"/\.kube/config$|/\.docker/config\.json$|/\.pgpass$|/\.pypirc$|/\.npmrc$|/\.vault-token$|"
    r"/\.config/gcloud/(credentials\.db|application_default_credentials\.json|legacy_credentials)|"
    r"/\.(cache/)?huggingface/token$|/\.config/rclone/rclone\.conf$|^/etc/(g?shadow|sudoers)-?$|^/etc/ssh/ssh_host_|"
    r"^/proc/[^/]+/environ$"  # a process's environment: its tokens, as `env` would print them
)
# A user's shell startup and login files: what runs in every new shell (or ssh login) of that user.
_STARTUP = (
    r"^\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zshenv|zprofile|zlogin|zlogout|cshrc|tcshrc|"
    r"login|logout|kshrc|inputrc)$|^\.config/fish/config\.fish$|^\.ssh/(config|rc|environment)$"
)
_CONDA_DIRS = (
    "miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba", ".conda", "conda",
    ".venv", "venv", ".virtualenvs", ".pyenv",
)  # fmt: skip


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether `path` is one of `roots` or beneath one."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots if r)


def classify_path(word: Word, ctx: GuardContext, cwd: str | None = None) -> set[str]:
    """Which TARGETS one argument word is (resolved against `cwd`)."""
    out: set[str] = set()
    if word.unset_vars:
        out.add("unset-var")
    if word.dynamic or not word.text or word.text.startswith("-"):
        return out
    text = word.text
    if _rx(_AGENT_CONFIG).search(text):
        out.add("agent-config")
    if ctx.protected_files:
        full = os.path.normpath(os.path.join(cwd or ctx.cwd, text))
        if any(full in (f, os.path.dirname(f)) for f in ctx.protected_files):  # the file or its folder
            out.add("agent-config")
    if text.startswith("~/") or text == "~":
        text = ctx.home + text[1:]
    elif text.startswith("~") and ctx.home_roots:
        text = ctx.home_roots[0].rstrip("/") + "/" + text[1:]
    path = os.path.normpath(os.path.join(cwd or ctx.cwd, text))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    base = path
    for glob in ("/*", "/.*"):
        if path.endswith(glob):
            base = path[: -len(glob)] or "/"
    if base == os.path.join(os.path.normpath(ctx.home), ".config"):  # holds ~/.config/frontdesk
        out.add("agent-config")
    if base == "/" or path in ("/.*",):
        out.add("root")
    if base in _SYSTEM_TOP or path.startswith(_SYSTEM_DEEP) and not path.startswith("/dev/shm"):
        out.add("system")
    if base == os.path.normpath(ctx.home) or base in ctx.home_roots or os.path.dirname(base) in ctx.home_roots:
        out.add("home")
    if under(path, ctx.shared_paths):
        out.add("shared")
    if under(path, ("/dev/shm", "/run/shm")):
        out.add("dev-shm")
    if under(path, ctx.scratch_roots):
        out.add("scratch")
        if _scratch_root(base, ctx.scratch_roots):
            out.add("scratch-root")
    if _rx(_DEVICE).match(path):
        out.add("device")
    out |= _extra_targets(path, base, ctx, cwd)
    return out


def _scratch_root(base: str, roots: tuple[str, ...]) -> bool:
    """A scratch root itself ($SCRATCH), or a directory right under a top root (/scratch/USER)."""
    inside = [r.rstrip("/") or "/" for r in roots if under(base, (r,))]
    if not inside:
        return False
    deepest = max(inside, key=len)
    top = not any(r != deepest and under(deepest, (r,)) for r in inside)
    return base == deepest or (top and os.path.dirname(base) == deepest)


def _extra_targets(path: str, base: str, ctx: GuardContext, cwd: str | None) -> set[str]:
    """Targets for the second pass: secrets, .git, other users' homes, project roots, env prefixes."""
    out: set[str] = set()
    home = os.path.normpath(ctx.home)
    if _rx(_CREDENTIALS).search(base):
        out.add("credentials")
    homes = [home, "/root"] + [os.path.join(r, base[len(r) :].lstrip("/").split("/")[0]) for r in ctx.home_roots]
    if any(under(base, (h,)) and _rx(_STARTUP).match(base[len(h) :].lstrip("/")) for h in homes if h != "/"):
        out.add("startup-file")
    if base.endswith("/.git"):
        out.add("git-dir")
    if path.startswith("/dev/nvidia"):
        out.add("gpu-device")
    in_home = under(base, (home,))
    for root in ctx.home_roots:
        if under(base, (root,)) and not in_home and base != root and os.path.dirname(base) != root:
            out.add("other-home")
    here = os.path.normpath(cwd or ctx.cwd)
    if base not in ("/", home) and (
        here == base
        or here.startswith(base.rstrip("/") + "/")
        or base in ctx.project_roots
        or (os.path.dirname(base) == home and not os.path.basename(base).startswith("."))
    ):
        out.add("project-root")
    env = ctx.env or {}
    prefixes = {env.get("CONDA_PREFIX"), env.get("VIRTUAL_ENV"), "/opt/conda"}
    prefixes |= {os.path.join(home, d) for d in _CONDA_DIRS}
    if base in prefixes:
        out.add("env-prefix")
    temp = ctx.temp_roots + ((env["TMPDIR"],) if env.get("TMPDIR", "").startswith("/") else ())
    known = (home, here, "/dev/shm", *ctx.home_roots, *ctx.scratch_roots, *ctx.shared_paths, *ctx.project_roots, *temp)
    if path.startswith("/") and not under(base, known) and base != "/" and not base.startswith(_SYSTEM_DEEP):
        if base not in _SYSTEM_TOP and not path.startswith("/dev/"):
            out.add("outside")
    return out
