"""Run the real Claude Code binary interactively in a private tmux server, pointed at a stand-in API.

`ClaudeInTmux` prepares a throwaway HOME (onboarding done, the project trusted, the API key approved),
starts `claude` in a detached tmux session on its own socket, and can read the pane, type a prompt, and
find the harness's pid. Everything it starts is stopped by `stop()`. Stdlib only.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ClaudeInTmux", "claude_bin", "ensure_claude", "CLAUDE_VERSION"]

CLAUDE_VERSION = "2.1.332"
NODE_DIR = Path(__file__).resolve().parents[1] / "node"
API_KEY = "sk-ant-standin-0000000000000000000000000000"


def claude_bin() -> Path:
    """Where the pinned Claude Code binary is (or will be) installed."""
    return NODE_DIR / "node_modules" / ".bin" / "claude"


def ensure_claude(timeout: float = 600) -> str | None:
    """Install the pinned Claude Code when missing; None when ready, else a one-line reason to skip."""
    exe = claude_bin()
    if exe.exists():
        got = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
        if CLAUDE_VERSION in got.stdout:
            return None
    if shutil.which("npm") is None:
        return "npm is not installed"
    res = subprocess.run(
        [
            "npm",
            "install",
            "--prefix",
            str(NODE_DIR),
            "--no-audit",
            "--no-fund",
            f"@anthropic-ai/claude-code@{CLAUDE_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if res.returncode != 0 or not exe.exists():
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        return f"npm install @anthropic-ai/claude-code failed: {last}"
    return None


@dataclass
class ClaudeInTmux:
    """One interactive Claude Code session in a private tmux server."""

    root: Path
    """A scratch directory: HOME, the project directory and the tmux socket live under it."""
    base_url: str
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = "cc"
    via_shell: bool = False
    """Start `claude` from an interactive bash in the pane (the pane outlives it, as in a terminal)."""

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.socket = self.root / "tmux.sock"
        self._last_pid: int | None = None
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=10, check=check
        )

    def prepare(self, settings: Mapping[str, object] | None = None) -> None:
        """Seed ~/.claude.json (no onboarding, trusted project, approved key) and the project's settings."""
        state = {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.332",
            "theme": "dark",
            "numStartups": 5,
            "autoUpdates": False,
            "bypassPermissionsModeAccepted": True,
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
            "projects": {
                str(self.project): {
                    "hasTrustDialogAccepted": True,
                    "allowedTools": [],
                    "hasCompletedProjectOnboarding": True,
                }
            },
        }
        (self.home / ".claude.json").write_text(json.dumps(state))
        (self.home / ".claude").mkdir(exist_ok=True)
        if settings is not None:
            (self.project / ".claude").mkdir(exist_ok=True)
            (self.project / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))

    def start(self, *claude_args: str) -> None:
        """Start `claude` in a detached tmux session (220x50)."""
        env = {
            **os.environ,
            **self.env,
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "TERM": "xterm-256color",
        }
        for key in (
            "TMUX",
            "TMUX_PANE",
            "CLAUDECODE",
            "CLAUDE_CODE_SESSION_ID",
            "CLAUDE_PID",
            "CLAUDE_CODE_MESSAGING_SOCKET",
            "CLAUDE_CODE_MESSAGING_TOKEN",
        ):
            env.pop(key, None)
        cmd = [str(claude_bin()), *claude_args]
        if self.via_shell:
            (self.root / "bashrc").write_text("PS1='user-shell$ '\n")
            cmd = ["bash", "--noprofile", "--rcfile", str(self.root / "bashrc"), "-i"]
        subprocess.run(
            [
                "tmux",
                "-S",
                str(self.socket),
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                "220",
                "-y",
                "50",
                "-c",
                str(self.project),
                *cmd,
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if self.via_shell:
            self.wait_screen("user-shell$", 10)
            self._tmux("send-keys", "-t", self.name, "-l", shlex.join([str(claude_bin()), *claude_args]))
            self._tmux("send-keys", "-t", self.name, "Enter")
        self.pid()

    def screen(self) -> str:
        """The visible pane text."""
        got = self._tmux("capture-pane", "-p", "-t", self.name, check=False)
        return got.stdout

    def wait_screen(self, needle: str, timeout: float) -> str:
        """Until `needle` shows on the pane; AssertionError with the screen on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if needle in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} not on screen after {timeout}s:\n{text}")
            time.sleep(0.2)

    def type(self, text: str) -> None:
        """Type a prompt and press Enter (the only keystrokes a test sends)."""
        self._tmux("send-keys", "-t", self.name, "-l", text)
        time.sleep(0.3)
        self._tmux("send-keys", "-t", self.name, "Enter")

    def pid(self) -> int | None:
        """The harness process (the pane's process)."""
        got = self._tmux("display-message", "-p", "-t", self.name, "#{pane_pid}", check=False)
        if got.stdout.strip().isdigit():
            self._last_pid = int(got.stdout.strip())
            return self._last_pid
        return None

    def kill_harness(self) -> None:
        """Kill the harness process as a crash would (the pane stays until tmux notices)."""
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """Stop the tmux server (the harness gets SIGHUP and cleans up), then make sure it is gone."""
        pid = self.pid() or self._last_pid
        self._tmux("kill-server", check=False)
        deadline = time.monotonic() + 5
        while pid is not None and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if pid is not None:  # the inbox socket a killed harness leaves behind
            Path(f"/tmp/cc-socks/{pid}.sock").unlink(missing_ok=True)
