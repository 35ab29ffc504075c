"""Text for a terminal: bytes a job (another user's, maybe) wrote never drive the reader's terminal.

A job's output, its report's excerpt, its name come from its user; `frontdesk logs`, `report`, `wait` and
`events` print them for whoever may read them (the owner, an admin, a labmate). Written to a terminal, an
escape sequence in them would set the reader's clipboard (OSC 52), title or colours, clear or fake the screen.
So text bound for a terminal shows C0 controls (but tab and newline) as `^X`, DEL as `^?` and C1 controls as
`\\x9b`; text for a pipe or a file, and every `--json` answer, is left as it is. Stdlib-free (the hot path).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["for_terminal"]

_SHOWN = {c: f"^{chr(c + 64)}" for c in range(32) if c not in (9, 10)}
_SHOWN[127] = "^?"
_SHOWN.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})


def for_terminal(text: str, stream: TextIO) -> str:
    """`text` as `stream` should get it: control characters made visible when it is a terminal."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return text
    return text.translate(_SHOWN) if tty else text
