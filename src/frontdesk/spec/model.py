"""The job spec model (pydantic v2) and its loading from YAML/JSON text, with one-line errors."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from frontdesk.errors import SpecError
from frontdesk.jobs.state import JobState
from frontdesk.spec.arrays import ArrayRange, SweepValue, check_array, parse_array, sweep_points
from frontdesk.spec.bounds import (
    MAX_ALIASES,
    MAX_DEPENDS_ON,
    MAX_EXPANDED_NODES,
    bound_message,
    check_text,
    check_unique_keys,
    expanded_size,
    preview,
    unique_keys,
)
from frontdesk.spec.gpushare import fractional_gpus
from frontdesk.spec.units import parse_duration, parse_memory

__all__ = [
    "GpuConstraints",
    "JobSpec",
    "JobType",
    "Resources",
    "RetryPolicy",
    "SlurmOptions",
    "load_spec",
    "parse_spec_text",
]

_RETRYABLE = {
    s.value
    for s in (
        JobState.FAILED,
        JobState.TIMEOUT,
        JobState.OUT_OF_MEMORY,
        JobState.NODE_FAIL,
        JobState.PREEMPTED,
        JobState.BOOT_FAIL,
        JobState.CANCELLED,
    )
}


class JobType(StrEnum):
    """The workload class; the policy engine classifies jobs that leave it out."""

    hpc = "hpc"
    training = "training"
    inference = "inference"
    agent = "agent"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


_MODEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"


class GpuConstraints(_Strict):
    """Which accelerator models a job can use."""

    type: list[Annotated[str, Field(pattern=_MODEL_NAME)]] = Field(default_factory=list, max_length=32)
    """Model names (a100, h100-80gb): letters, digits and `_.+-` only; a name may be written into a batch
    script's `#SBATCH --gres=gpu:TYPE:N`, where a newline would add a directive that root's sbatch obeys."""
    min_memory: int | None = None
    fp64: bool = False
    interconnect: Annotated[str, Field(pattern=_MODEL_NAME)] | None = None
    memory: Annotated[int, Field(gt=0)] | None = None
    """GPU memory asked on a shared GPU (bytes): the job gets a share of one device, packed with others by memory."""
    share: Annotated[float, Field(gt=0, lt=1)] | None = None
    """The share of one GPU's compute (`gpus: 0.25`); without `memory` it also asks that share of its memory."""

    @field_validator("type", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("min_memory", "memory", mode="before")
    @classmethod
    def _mem(cls, v: Any) -> Any:
        return None if v is None else parse_memory(v)

    @property
    def shared(self) -> bool:
        """A fractional request: a share of one device, never a whole one."""
        return self.memory is not None or self.share is not None


class Resources(_Strict):
    """What a job asks for."""

    cpus: Annotated[int, Field(ge=1, le=4096)] = 1
    memory: int | None = None
    gpus: Annotated[int, Field(ge=0, le=64)] = 0
    gpu: GpuConstraints | None = None
    walltime: int | None = None

    @field_validator("memory", mode="before")
    @classmethod
    def _mem(cls, v: Any) -> Any:
        return None if v is None else parse_memory(v)

    @field_validator("walltime", mode="before")
    @classmethod
    def _wall(cls, v: Any) -> Any:
        return None if v is None else parse_duration(v)

    @model_validator(mode="before")
    @classmethod
    def _fractional_gpus(cls, data: Any) -> Any:
        """`gpus: 0.25` becomes one shared GPU (`gpus: 1`, `gpu.share: 0.25`); `gpu.memory` alone asks one too."""
        return fractional_gpus(data)

    @model_validator(mode="after")
    def _one_shared_gpu(self) -> Resources:
        if self.gpu is not None and self.gpu.shared and self.gpus != 1:
            raise ValueError(f"gpu.memory/gpu.share ask for a share of one GPU; they cannot go with gpus: {self.gpus}")
        return self

    @property
    def shared_gpu(self) -> bool:
        """A fractional GPU request (packed with other fractional jobs on one device by memory)."""
        return self.gpu is not None and self.gpu.shared


class RetryPolicy(_Strict):
    """Resubmit an attempt that ended in one of `on`, up to `count` times."""

    count: Annotated[int, Field(ge=0, le=20)] = 0
    on: list[str] = Field(default_factory=lambda: [JobState.FAILED.value, JobState.NODE_FAIL.value])
    backoff: int = 0

    @field_validator("on", mode="before")
    @classmethod
    def _states(cls, v: Any) -> Any:
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list):
            raise ValueError("expected a list of end states")
        out = []
        for s in items:
            name = str(s).upper()
            if name not in _RETRYABLE:
                raise ValueError(f"{s!r} is not an end state to retry on (one of {sorted(_RETRYABLE)})")
            out.append(name)
        return out

    @field_validator("backoff", mode="before")
    @classmethod
    def _backoff(cls, v: Any) -> Any:
        return 0 if v in (None, 0, "0") else parse_duration(v)


class SlurmOptions(_Strict):
    """What an `sbatch` command line asks of Slurm beyond the resources (filled by the sbatch shim).

    `options` are sbatch long options passed to the real sbatch unchanged; the Slurm plug-in checks them
    against its table (backends/slurm/options.py) before anything is stored."""

    options: list[str] = Field(default_factory=list)
    job_name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    """Slurm's job name exactly as given (SLURM_JOB_NAME, squeue -n, scancel --name)."""
    output: str | None = None
    """sbatch's -o pattern (Slurm fills %j, %x...), relative to the working directory."""
    error: str | None = None
    export: str | None = None
    """sbatch's --export: ALL (default), NONE, or [ALL,]NAME[=value],..."""
    args: list[str] = Field(default_factory=list)
    """The batch script's own arguments."""
    submit_by: float | None = None
    """Epoch seconds after which the submitter has given up: a late first submission is refused."""

    @field_validator("job_name", "output", "error", "export")
    @classmethod
    def _one_line(cls, v: str | None) -> str | None:
        if v is not None and any(c in v for c in "\n\r\0"):
            raise ValueError("must be one line")
        return v


class JobSpec(_Strict):
    """One job: what to run, with what, after what, and whom to tell."""

    name: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.@+-]+$")] | None = None
    command: list[str] | None = None
    script: str | None = None
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    type: JobType | None = None
    resources: Resources = Field(default_factory=Resources)
    trial: bool = False
    depends_on: list[Annotated[int, Field(ge=1, le=2**63 - 1)] | Annotated[str, Field(max_length=128)]] = Field(
        default_factory=list, max_length=MAX_DEPENDS_ON
    )
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    fail_action: Literal["abort", "continue"] = "abort"
    dependency_timeout: int | None = None
    idempotency_key: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    session: str | None = None
    pool: str | None = None
    slurm: SlurmOptions | None = None
    """sbatch options, read by the Slurm backend only."""
    array: Annotated[str, Field(max_length=2000)] | None = None
    """Task indices (`0-99`, `1,3,5-9`, `0-99%8`): one task per index (spec/arrays.py)."""
    sweep: dict[str, Any] | list[dict[str, Any]] | None = None
    """A parameter grid or list of points: one task per point, `{name}` filled in the command."""
    array_report: Literal["end", "first_failure"] | None = None
    """When the array's one report is told: when its last task ends (None: "end"), or at its first failure."""
    aftercorr: Annotated[int, Field(ge=1, le=2**63 - 1)] | Annotated[str, Field(max_length=128)] | None = None
    """An array (id or name) of the same size: task i starts once that array's task i completed."""

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, v: Any) -> Any:
        if isinstance(v, str):
            import shlex

            try:
                return shlex.split(v)
            except ValueError as exc:
                raise ValueError(f"cannot split the command line: {exc}") from None
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not key or not (key[0].isalpha() or key[0] == "_") or not all(c.isalnum() or c == "_" for c in key):
                raise ValueError(f"{key!r} is not a valid environment variable name")
        return v

    @field_validator("dependency_timeout", mode="before")
    @classmethod
    def _dep_timeout(cls, v: Any) -> Any:
        return None if v is None else parse_duration(v)

    @field_validator("depends_on", mode="before")
    @classmethod
    def _deps(cls, v: Any) -> Any:
        items = [v] if isinstance(v, int | str) else v
        if isinstance(items, list) and len(items) <= MAX_DEPENDS_ON * 10:
            return list(dict.fromkeys(items))  # a repeated dependency counts once
        return items

    @field_validator("array")
    @classmethod
    def _array(cls, v: str | None) -> str | None:
        if v is not None:
            parse_array(v)  # ValueError: one line naming what is wrong
        return v

    @field_validator("sweep", mode="before")
    @classmethod
    def _sweep(cls, v: Any) -> Any:
        if v is not None:
            sweep_points(v)
        return v

    @model_validator(mode="after")
    def _one_of_command_script(self) -> JobSpec:
        if bool(self.command) == bool(self.script):
            raise ValueError("exactly one of 'command' (a non-empty list) or 'script' is required")
        if self.is_array:
            check_array(self.array, self.sweep, self.command or [], self.script, self.env)
        if self.aftercorr is not None and not self.is_array:
            raise ValueError("'aftercorr' needs 'array' or 'sweep' (task i waits on task i of another array)")
        return self

    @property
    def is_array(self) -> bool:
        """Whether this spec makes an array of tasks (an `array` or a `sweep`)."""
        return self.array is not None or self.sweep is not None

    def array_range(self) -> ArrayRange | None:
        """The task indices and the `%N` limit (a sweep alone: one task per point, no limit)."""
        if self.array is not None:
            return parse_array(self.array)
        if self.sweep is not None:
            return ArrayRange(tuple(range(len(sweep_points(self.sweep)))))
        return None

    def sweep_point(self, index: int) -> dict[str, SweepValue]:
        """The sweep parameters of task `index` ({} without a sweep)."""
        return {} if self.sweep is None else sweep_points(self.sweep)[index]

    def argv(self) -> list[str]:
        """The command line to run (scripts are written to a file by the gateway)."""
        return list(self.command or [])

    def template(self) -> str:
        """A normalised form of what this job runs, used to match it with earlier jobs."""
        text = " ".join(self.command) if self.command else (self.script or "")
        return " ".join(text.split())[:500]


def _yaml_load(text: str) -> Any:
    """YAML with 1.2 booleans: `on:`/`yes`/`off` stay strings (a retry's `on:` list must not become True)."""
    import re as _re

    import yaml

    class _Loader(yaml.SafeLoader):  # type: ignore[misc]
        """Refuses alias bombs while composing, before anything walks the expanded document."""

        aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise SpecError(f"spec: cannot parse: more than {MAX_ALIASES} YAML aliases")
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            check_unique_keys(node)
            return super().construct_mapping(node, deep)

        def compose_document(self) -> Any:
            node = super().compose_document()
            if node is not None and expanded_size(node) > MAX_EXPANDED_NODES:
                raise SpecError(f"spec: cannot parse: more than {MAX_EXPANDED_NODES} values once YAML aliases expand")
            return node

    _Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", _re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _format_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    path = ".".join(str(p) for p in err.get("loc", ())) or "(spec)"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        return f"{path}: unknown field"
    shown = preview(err.get("input"))  # never serialise the whole value: it may be an expanded alias bomb
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    got = "" if "got " in msg else f"; got {shown}"
    return f"{path}: {msg}{got}{more}"


def parse_spec_text(text: str, fmt: str | None = None, source: str = "spec") -> JobSpec:
    """Validate YAML or JSON text into a JobSpec; any problem raises SpecError naming the field."""
    data: Any
    try:
        if fmt == "json" or (fmt is None and text.lstrip().startswith("{")):
            data = json.loads(text, object_pairs_hook=unique_keys)
        else:
            data = _yaml_load(text)
    except SpecError as exc:
        raise SpecError(bound_message(str(exc).replace("spec:", f"{source}:", 1))) from None
    except (ValueError, Exception) as exc:  # yaml.YAMLError and json errors alike
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecError(bound_message(f"{source}: cannot parse: {first}")) from None
    return validate_spec(data, source)


def validate_spec(data: Any, source: str = "spec") -> JobSpec:
    """Validate already-parsed data into a JobSpec."""
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    check_text(data, bound_message(source, 80))
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise SpecError(
            bound_message(f"{source}: {_format_error(exc)}"),
            field=".".join(str(p) for p in err.get("loc", ())),
        ) from None


def load_spec(path: str | Path) -> JobSpec:
    """Read and validate a spec file (.yaml, .yml or .json)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError(f"{p}: {exc.strerror}") from None
    return parse_spec_text(text, "json" if p.suffix == ".json" else None, str(p))
