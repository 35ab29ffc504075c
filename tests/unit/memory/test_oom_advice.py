"""What to ask for after an out-of-memory ending: the learned fix, a completed sibling's peak, or twice the limit."""

from __future__ import annotations

from memory_helpers import ctx

from frontdesk.memory.classify import classify
from frontdesk.memory.lesson import describe
from frontdesk.memory.oom import memory_suggestion
from frontdesk.memory.store import LessonStore
from frontdesk.reports.build import suggest_oom_memory

M = 1024**2


def test_killed_at_the_limit_asks_for_twice_the_limit_and_says_why() -> None:
    want, why = suggest_oom_memory(159 * M, 159 * M)
    assert want == 318 * M and "twice the limit" in why
    want, why = suggest_oom_memory(40 * M, 159 * M)  # an allocation failed well under the limit
    assert want == 239 * M and why == "1.5x the peak"


def test_a_completed_siblings_peak_beats_the_multiple_of_the_limit() -> None:
    runs = [
        {"job_id": 4, "state": "COMPLETED", "used": {"peak_rss_bytes": 410 * M}},
        {"job_id": 3, "state": "OUT_OF_MEMORY", "used": {"peak_rss_bytes": 159 * M}},
    ]
    want, why = memory_suggestion(159 * M, 159 * M, runs, [])
    assert want == 615 * M and why == "1.5x the peak of completed job 4 (410M)"
    small = [{"job_id": 5, "state": "COMPLETED", "used": {"peak_rss_bytes": 20 * M}}]
    assert memory_suggestion(159 * M, 159 * M, small, [])[1].startswith("twice the limit")


def test_the_learned_fix_beats_everything(store: LessonStore) -> None:
    small, big = ctx(memory=100 * M), ctx(memory=1024 * M)
    oom = classify("", "OUT_OF_MEMORY")
    store.record_run(1, "alice", small, "OUT_OF_MEMORY", oom, {"peak_rss_bytes": 100 * M})
    [lesson] = store.record_failure(1, "alice", small, oom)
    store.record_run(2, "alice", big, "COMPLETED", None, {"peak_rss_bytes": 400 * M})
    [fixed] = store.learn_from_success(2, "alice", big)
    want, why = memory_suggestion(100 * M, 100 * M, store.runs("alice", small.template), [fixed])
    assert want == 1024 * M and why == "the fix learned from job 2: it completed with 1G"
    assert lesson.id == fixed.id


def test_gpu_oom_lesson_says_what_was_requested_and_used(store: LessonStore) -> None:
    c = ctx(gpus=2, gpu={"type": ["A100"]})
    sig = classify("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "FAILED")
    [lesson] = store.record_failure(7, "alice", c, sig, used={"gpu_mem_peak_bytes": 40 * 1024**3})
    text = describe(lesson)
    assert "with 2 GPUs (A100), using at most 40G of GPU memory" in text and " at none" not in text


def test_a_labmates_fix_is_named_as_theirs_and_never_sets_a_far_larger_request(store: LessonStore) -> None:
    """bob's one run that completed with 64G (his lesson shared with the lab) does not tell alice's 100M job to ask
    for 64G; a fix within 4x her request is used and says whose job it came from."""
    small, huge, fair = ctx(memory=100 * M), ctx(memory=64 * 1024 * M), ctx(memory=300 * M)
    oom = classify("", "OUT_OF_MEMORY")
    for who, big, first in (("bob", huge, 1), ("carol", fair, 3)):
        store.record_run(first, who, small, "OUT_OF_MEMORY", oom, {"peak_rss_bytes": 100 * M})
        store.record_failure(first, who, small, oom)
        store.record_run(first + 1, who, big, "COMPLETED", None, {"peak_rss_bytes": 90 * M})
    [bobs] = store.learn_from_success(2, "bob", huge)
    [carols] = store.learn_from_success(4, "carol", fair)
    want, why = memory_suggestion(100 * M, 100 * M, [], [bobs], "alice")
    assert want == 200 * M and why.startswith("twice the limit")  # bob's 64G is not evidence for alice
    assert memory_suggestion(100 * M, 100 * M, [], [bobs], "bob")[0] == 64 * 1024 * M  # his own still is
    assert memory_suggestion(100 * M, 100 * M, [], [bobs, carols], "alice") == (
        300 * M,
        "the fix learned from carol's job 4: it completed with 300M",
    )
