"""The shepherd's output cap: each of a job's output files kept under the site's `output_max_bytes`.

Stdlib only (the shepherd imports it and starts fast).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["OutputCap"]


class OutputCap:
    """Keeps each output file under `output_max_bytes` (a site setting): past it, the older half is cut
    and a line says how much; the result counts the bytes cut and stderr's last line says so."""

    def __init__(self, launch: dict[str, Any]) -> None:
        self.limit = int(launch.get("output_max_bytes") or 0)
        self.paths = {"stdout": Path(launch["stdout"]), "stderr": Path(launch["stderr"])}
        self.cut = {"stdout": 0, "stderr": 0}

    def check(self) -> None:
        if not self.limit:
            return
        for name, path in self.paths.items():
            try:
                size = path.stat().st_size
                if size <= self.limit:
                    continue
                keep = self.limit // 2
                with open(path, "r+b") as fh:
                    fh.seek(size - keep)
                    tail = fh.read(keep)
                    fh.seek(0)
                    fh.truncate(0)
                    self.cut[name] += size - len(tail)
                    fh.write(
                        f"frontdesk: {self.cut[name]} bytes of {name} cut (output limit {self.limit} bytes)\n".encode()
                    )
                    fh.write(tail)
            except OSError:
                continue

    def result(self) -> dict[str, Any]:
        self.check()
        if not any(self.cut.values()):
            return {}
        note = ", ".join(f"{n} {c} bytes" for n, c in self.cut.items() if c)
        try:
            with open(self.paths["stderr"], "ab") as fh:
                fh.write(f"frontdesk: output was cut at the site limit of {self.limit} bytes ({note})\n".encode())
        except OSError:
            pass
        return {"output_cut_bytes": {n: c for n, c in self.cut.items() if c}}
