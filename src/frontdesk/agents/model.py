"""The agent session record and the `[agents]` settings. Pure data: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError

__all__ = ["AGENTS_KEYS", "AgentSettings", "Harness", "Session", "SessionKey", "TurnState", "DEFAULT_CHANNELS"]

SessionKey = tuple[str, str]
"""(user, session id): a session id is its user's own name, so two users may use the same id independently."""

DEFAULT_CHANNELS: tuple[str, ...] = ("inbox", "codex_live", "hooks", "tmux", "headless")


class Harness(StrEnum):
    """The agent harness a session runs in."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini"
    CURSOR = "cursor"
    COPILOT = "copilot"
    OTHER = "other"

    @classmethod
    def parse(cls, value: str | None) -> Harness:
        """Map a loose name (claude, claude-code, codex...) to a member; unknown → OTHER."""
        text = (value or "").strip().lower()
        aliases = {
            "claude": cls.CLAUDE_CODE,
            "claude_code": cls.CLAUDE_CODE,
            "claudecode": cls.CLAUDE_CODE,
            "gemini-cli": cls.GEMINI,
        }
        if text in aliases:
            return aliases[text]
        try:
            return cls(text)
        except ValueError:
            return cls.OTHER


class TurnState(StrEnum):
    """Where the session's agent is in its loop, as its hooks told us."""

    UNKNOWN = "unknown"
    """No hook has reported yet (a session seen only through its jobs)."""
    IN_TURN = "in_turn"
    """A prompt was submitted (UserPromptSubmit) or a Stop hook blocked: the model is working."""
    STOPPING = "stopping"
    """The Stop hook is running: the turn is about to end."""
    IDLE = "idle"
    """The turn ended (Stop released, Codex notify): the session waits for its user."""
    ENDED = "ended"
    """The harness process exited (SessionEnd, or its pid is gone)."""


@dataclass(frozen=True)
class Session:
    """An agent session as a principal: whose it is, where it runs, how to reach it, what it has read."""

    id: str
    user: str
    harness: Harness = Harness.OTHER
    cwd: str | None = None
    reach: dict[str, Any] = field(default_factory=dict)
    turn_state: TurnState = TurnState.UNKNOWN
    turn_changed_at: float = 0.0
    stop_blocks: int = 0
    ack_seq: int = 0
    lease_upto: int = 0
    lease_until: float = 0.0
    registered_at: float = 0.0
    last_seen_at: float = 0.0
    last_channel: str | None = None
    last_reason: str | None = None

    @property
    def key(self) -> SessionKey:
        """(user, id): what names this session in the store and in every in-memory map."""
        return (self.user, self.id)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`frontdesk sessions --json`); `reach` keeps only non-secret keys."""
        reach = {k: v for k, v in self.reach.items() if "token" not in k.lower()}
        return {
            "id": self.id,
            "user": self.user,
            "harness": str(self.harness),
            "cwd": self.cwd,
            "reach": reach,
            "turn_state": str(self.turn_state),
            "turn_changed_at": self.turn_changed_at,
            "ack_seq": self.ack_seq,
            "registered_at": self.registered_at,
            "last_seen_at": self.last_seen_at,
            "last_channel": self.last_channel,
            "last_reason": self.last_reason,
        }


@dataclass(frozen=True)
class AgentSettings:
    """`[agents]` in frontdesk.toml, validated."""

    channels: tuple[str, ...] = DEFAULT_CHANNELS
    allow_headless: bool = False
    batch_window_s: float = 1.0
    batch_max_s: float = 5.0
    lease_s: float = 30.0
    retry_max_s: float = 60.0
    max_stop_blocks: int = 6
    stop_grace_s: float = 30.0
    stop_hold_s: float = 60.0
    """The longest an attended turn is held open by the Stop hook; then the async wake takes over (issue 19)."""
    tmux_idle_s: float = 2.0
    headless_timeout_s: float = 900.0
    claude_bin: str = "claude"
    codex_bin: str = "codex"
    tmux_bin: str = "tmux"

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> AgentSettings:
        """Validate a raw `[agents]` table; unknown keys are an error with the list of known ones."""
        known = AGENTS_KEYS.keys
        unknown = set(section) - known
        if unknown:
            raise ConfigError(f"[agents]: unknown setting(s) {sorted(unknown)}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for key, raw in section.items():
            default = getattr(cls, key)
            if key == "channels":
                if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
                    raise ConfigError("[agents].channels: expected a list of channel names")
                values[key] = tuple(raw)
            elif isinstance(default, bool):
                if not isinstance(raw, bool):
                    raise ConfigError(f"[agents].{key}: expected true or false, got {raw!r}")
                values[key] = raw
            elif isinstance(default, int | float):
                if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
                    raise ConfigError(f"[agents].{key}: expected a non-negative number, got {raw!r}")
                values[key] = type(default)(raw)
            else:
                if not isinstance(raw, str) or not raw:
                    raise ConfigError(f"[agents].{key}: expected a non-empty string, got {raw!r}")
                values[key] = raw
        return cls(**values)


AGENTS_KEYS = TableKeys.of("agents", AgentSettings.__dataclass_fields__)
"""`[agents]`: the fields of AgentSettings."""
