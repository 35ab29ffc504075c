"""The job spec: one typed model validated at the edge, loaded from YAML or JSON."""

from frontdesk.spec.model import (
    GpuConstraints,
    JobSpec,
    JobType,
    Resources,
    RetryPolicy,
    load_spec,
    parse_spec_text,
)

__all__ = ["GpuConstraints", "JobSpec", "JobType", "Resources", "RetryPolicy", "load_spec", "parse_spec_text"]
