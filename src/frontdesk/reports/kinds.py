"""The one vocabulary of failure kinds: reports, `--json` output, lessons and the catalog all use these names.

Each member but `OK` and `UNKNOWN` has an entry under `[kinds]` in `reports/catalog.toml` (its summary and
next step); a test keeps the two in step. Job *states* (Slurm's names) are another vocabulary: a state says
how a job ended, a kind says why.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FailureKind"]


class FailureKind(StrEnum):
    """Why a job ended the way it did."""

    OK = "ok"
    """It completed."""
    UNKNOWN = "unknown"
    """Nothing in the state or the log says."""
    HOST_OOM = "host_oom"
    """Ran out of host memory (cgroup or kernel OOM kill, MemoryError, bad_alloc)."""
    CUDA_OOM = "cuda_oom"
    """Ran out of GPU memory (PyTorch, TensorFlow, JAX, cuBLAS)."""
    WALLTIME = "walltime"
    """Ran past its time limit."""
    MISSING_IMPORT = "missing_import"
    """A Python or R package is not installed."""
    MISSING_MODULE = "missing_module"
    """An environment module (Lmod/Tcl) does not exist."""
    MISSING_LIBRARY = "missing_library"
    """A shared library cannot be found."""
    TOOLCHAIN_MISMATCH = "toolchain_mismatch"
    """A compiled extension does not match the library it loads against (ABI)."""
    GLIBC_VERSION = "glibc_version"
    """The program needs a newer GLIBC/GLIBCXX/CXXABI than the node has."""
    MPI_LAUNCH = "mpi_launch"
    """The MPI launcher failed (PMI/PMIx, ORTE/PRRTE, direct launch)."""
    DRIVER_MISMATCH = "driver_mismatch"
    """The GPU driver is older than the CUDA runtime needs."""
    NO_KERNEL_IMAGE = "no_kernel_image"
    """The GPU code was not built for this GPU's compute capability."""
    NO_GPU = "no_gpu"
    """No GPU was visible to the job."""
    CUDA_ERROR = "cuda_error"
    """Another CUDA/GPU error (illegal memory access, device-side assert, ECC, Xid)."""
    NCCL_ERROR = "nccl_error"
    """A NCCL collective failed or timed out."""
    DEVICE_MISMATCH = "device_mismatch"
    """Tensors or weights on different devices."""
    NAN_LOSS = "nan_loss"
    """The loss became NaN/Inf."""
    ADDRESS_IN_USE = "address_in_use"
    """A port the job binds was taken."""
    PACKAGE_RESOLUTION = "package_resolution"
    """pip/conda/mamba could not resolve the packages."""
    HUB_OFFLINE = "hub_offline"
    """A model hub could not be reached and nothing was cached."""
    SEGFAULT = "segfault"
    """A segmentation fault or bus error."""
    ILLEGAL_INSTRUCTION = "illegal_instruction"
    """CPU instructions the node lacks."""
    DISK_QUOTA = "disk_quota"
    """A disk quota was exceeded or the disk filled."""
    PERMISSION_DENIED = "permission_denied"
    """Access to a file or directory was denied."""
    NODE_FAILURE = "node_failure"
    """The node failed (not the job's fault)."""
    CANCELLED = "cancelled"
    """It was cancelled."""
    PREEMPTED = "preempted"
    """A higher-priority job preempted it."""
    DEPENDENCY = "dependency"
    """A job it depends on did not complete."""
    EXIT_ERROR = "exit_error"
    """Exited with an error no other kind explains (the decisive error line is the detail)."""
