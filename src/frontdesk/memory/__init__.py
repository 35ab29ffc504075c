"""Failure memory: signatures, lessons with provenance and scopes, learned fixes, resource advice.

`classify` is pure and works offline; `LessonStore` keeps lessons in the gateway's SQLite database;
`MemoryPlugin` wires both into the gateway (imported by the gateway, not here, to keep imports light).
"""

from frontdesk.memory.classify import Signature, classify, normalise

__all__ = ["Signature", "classify", "normalise"]
