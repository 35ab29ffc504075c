"""The classifier over the shipped corpus, the normaliser, and the catalog's own soundness."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.memory.classify import classify, load_catalog, normalise

CORPUS = Path(__file__).resolve().parents[2] / "data" / "logs"
FILES = sorted(CORPUS.glob("*/*.log"))


def _state(path: Path) -> str | None:
    state = path.stem.rsplit("__", 1)[-1]
    return None if state == "ANY" else state


def test_corpus_is_large_and_covers_every_kind() -> None:
    assert len(FILES) >= 100
    kinds = {p.parent.name for p in FILES}
    assert {
        "host_oom",
        "cuda_oom",
        "walltime",
        "missing_import",
        "missing_module",
        "missing_library",
        "toolchain_mismatch",
        "disk_quota",
        "permission_denied",
        "node_failure",
        "exit_error",
    } <= kinds
    assert kinds <= set(load_catalog().kinds)


def test_corpus_accuracy_at_least_95_percent() -> None:
    wrong = [(p.parent.name, p.name, classify(p.read_text(), _state(p)).kind) for p in FILES]
    wrong = [w for w in wrong if w[0] != w[2]]
    assert len(wrong) <= len(FILES) * 0.05, wrong


def test_hints_are_sound_on_the_corpus() -> None:
    """Every regex match contains one of its matcher's hints, else the prefilter would hide it."""
    for path in FILES:
        text = path.read_text()
        for m in load_catalog().matchers:
            for match in m.regex.finditer(text):
                assert any(h in match.group(0).lower() for h in m.hints) or not m.hints, (m.id, path.name)


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("missing_import/torch-not-installed__FAILED.log", "torch"),
        ("missing_import/submodule__FAILED.log", "tokenizers"),
        ("missing_library/libcudart__FAILED.log", "libcudart.so"),
        ("missing_library/libmpi__FAILED.log", "libmpi.so"),
        ("missing_library/holdout-libpython__FAILED.log", "libpython3.11.so"),
        ("missing_import/slurm-lab-captured__FAILED.log", "torch_nonexistent_mod"),
        ("missing_module/lmod-unknown-cuda__FAILED.log", "cuda"),
        ("missing_module/tcl-modules__FAILED.log", "intel"),
        ("glibc_version/glibc-version__FAILED.log", "GLIBC"),
        ("nccl_error/watchdog-timeout__FAILED.log", "timeout"),
        ("no_kernel_image/torch-sm__FAILED.log", "sm_90"),
        ("hub_offline/transformers-offline__FAILED.log", "gpt2"),
        ("host_oom/slurm-stepd-batch__OUT_OF_MEMORY.log", ""),
    ],
)
def test_detail_tells_failures_of_one_kind_apart(name: str, detail: str) -> None:
    path = CORPUS / name
    assert classify(path.read_text(), _state(path)).detail == detail


def test_slurm_oom_line_is_the_matched_line() -> None:
    sig = classify((CORPUS / "host_oom/slurm-stepd-batch__OUT_OF_MEMORY.log").read_text(), "OUT_OF_MEMORY")
    assert sig.matcher == "slurm-oom-kill"
    assert "Detected 1 oom-kill event(s) in StepId=4419021.batch" in sig.line
    assert "StepId=<n>.batch" in sig.normalised_line
    assert sig.key == "OUT_OF_MEMORY:host_oom:"


def test_strict_state_wins_over_noise() -> None:
    text = "mkdir: cannot create directory '/x': Permission denied\nstep 10\n"
    assert classify(text, "TIMEOUT").kind == "walltime"
    assert classify(text, "OUT_OF_MEMORY").kind == "host_oom"
    assert classify(text, "FAILED").kind == "permission_denied"


def test_last_error_line_is_normalised_so_runs_match() -> None:
    a = classify("Traceback...\nValueError: expected 128 features, got 127 in /home/a/x.py\n", "FAILED")
    b = classify("ValueError: expected 64 features, got 63 in /home/b/y.py\n", "FAILED")
    assert a.kind == b.kind == "exit_error"
    assert a.key == b.key == "FAILED:exit_error:ValueError: expected <n> features, got <n> in <path>"


def test_exit_code_only_and_completed() -> None:
    assert classify("", "FAILED", exit_code=3).detail == "exit code <n>"
    assert classify("anything", "COMPLETED").kind == "ok"
    assert classify("", None).kind == "unknown"


def test_normalise_strips_paths_numbers_ids_hex_and_times() -> None:
    line = (
        "2026-11-30T04:12:55 job 5512093 at 0x7f3a0000 id 3f2a9c1b77e0 on 10.1.2.3 "
        "wrote /scratch/alice/out_0017.h5 uuid 123e4567-e89b-12d3-a456-426614174000 at 11:02:03"
    )
    assert normalise(line) == ("<time> job <n> at <hex> id <hex> on <ip> wrote <path> uuid <id> at <time>")
    assert normalise("module cuda/12.9 and lib.so.12") == "module cuda/<n> and lib.so.<n>"


@given(st.text(max_size=2000), st.sampled_from([None, "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY"]))
def test_classify_never_raises(text: str, state: str | None) -> None:
    sig = classify(text, state)
    assert sig.kind in load_catalog().kinds or sig.kind in ("ok", "unknown")
    assert sig.key.count(":") >= 2


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=300))
def test_normalise_is_idempotent_and_digit_free(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once
    assert not any(ch.isdigit() for ch in once)


def test_failure_kinds_are_the_catalog_kinds() -> None:
    from frontdesk.memory.kinds import FailureKind

    assert {k.value for k in FailureKind} - {"ok", "unknown"} == set(load_catalog().kinds)


def test_every_kind_has_a_next_step_and_details_make_it_specific() -> None:
    kinds = load_catalog().kinds
    assert all(info.advice("") and "{detail}" not in info.advice("") for info in kinds.values())
    assert "flash_attn" in kinds["missing_import"].advice("flash_attn")
    assert "sm_90" in kinds["no_kernel_image"].advice("sm_90")
    assert "not a driver problem" in kinds["no_kernel_image"].advice("")


def test_decisive_error_wins_over_an_earlier_warning() -> None:
    warn = (
        "2024-01-01 10:00:00.1: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load "
        "dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file\n"
    )
    assert classify(warn, "FAILED").kind == "missing_library"  # nothing else said: the warning is all there is
    sig = classify(warn + "Traceback (most recent call last):\nKeyError: 'label'\n", "FAILED")
    assert sig.kind == "exit_error" and sig.detail == "KeyError: 'label'"
    oom = warn + "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor\n"
    assert classify(oom, "FAILED").kind == "cuda_oom"


def test_final_traceback_line_outranks_earlier_errors() -> None:
    text = (
        "mkdir: cannot create directory '/x': Permission denied\n"
        "[rank0]: RuntimeError: NCCL error: unhandled system error\n"
    )
    sig = classify(text, "FAILED")
    assert sig.kind == "nccl_error" and sig.detail == "unhandled system error"


def test_a_specific_kind_on_the_final_line_beats_a_generic_one_there() -> None:
    """PyTorch prints the decisive `CUDA error: no kernel image ...` line and then the capability it lacks: the
    specific kind (a build for the wrong compute capability) must win over the generic CUDA error on that line."""
    from frontdesk.memory.classify import classify as classify_log

    log = (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
        "NVIDIA H100 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\n"
    )
    sig = classify_log(log, "FAILED", 1)
    assert sig.kind == "no_kernel_image" and "driver" not in sig.next_step.split(";")[0]
    generic = classify_log("RuntimeError: CUDA error: an illegal memory access was encountered\n", "FAILED", 1)
    assert generic.kind == "cuda_error"
