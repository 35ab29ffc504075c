"""Storage operators next to the data: grep, find, head, tail, wc, tree and du that return only results.

`ops.run(FsRequest, Fs) -> Result` answers one question; `fs.Fs` is the counted, cached I/O edge (one per
caller identity); `budget` is the per-principal metadata token bucket; `worker`/`pool` run the operators as
the caller (a child per uid/gid/groups) for the gateway's plug-in (`plugin.StoragePlugin`, routes /v1/fs/...).
"""

from __future__ import annotations

__all__: list[str] = []
