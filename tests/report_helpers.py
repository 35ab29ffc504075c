"""A `JobRecord` as the store returns it, for report tests (reports are built from records)."""

from __future__ import annotations

import json
import os
from typing import Any

from frontdesk.jobs.record import JobRecord
from frontdesk.jobs.state import JobState


def job_record(**fields: Any) -> JobRecord:
    """An ended job's record: `spec` and `usage` may be given as JSON values; unset columns take plain defaults."""
    spec, usage = fields.pop("spec", {"command": ["true"]}), fields.pop("usage", None)
    base: dict[str, Any] = dict(
        id=7,
        name=None,
        spec=spec if isinstance(spec, str) else json.dumps(spec),
        context=json.dumps({"uid": os.geteuid()}),  # submitted by this process: its logs are its own
        state=JobState.COMPLETED,
        reason=None,
        backend="local",
        backend_id=None,
        attempt=1,
        submitting=False,
        principal="alice",
        session=None,
        job_class=None,
        class_reason=None,
        partition=None,
        priority=0,
        qos=None,
        idempotency_key=None,
        exit_code=None,
        signal=None,
        submitted_at=1000.0,
        eligible_at=None,
        started_at=None,
        ended_at=None,
        usage=usage if usage is None or isinstance(usage, str) else json.dumps(usage),
        stdout_path=None,
        stderr_path=None,
        report=None,
    )
    base.update(fields)
    base["state"] = JobState(base["state"])
    return JobRecord(**base)
