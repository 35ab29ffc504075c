"""The nvidia-smi csv readers of the GPU watch: one row reader (csv_rows), three readings of the rows.

Real nvidia-smi output forms: a header line where `noheader` was not honoured, a warning line, blank lines,
"[N/A]" where a figure is hidden (another user's process, or a board that does not report it).
"""

from __future__ import annotations

from frontdesk.backends.gpuwatch import MiB, csv_rows, parse_apps_by_gpu, parse_compute_apps

UUID0 = "GPU-00000000-0000-0000-0000-000000000000"
UUID1 = "GPU-00000000-0000-0000-0000-000000000001"


def test_rows_of_the_asked_width_that_start_with_a_number() -> None:
    text = f"pid, used_memory, gpu_uuid\n\n 12 , 30 , {UUID0}\nWARNING: x, y, z\n13, 5\n14, 1, {UUID1}, extra\n"
    assert list(csv_rows(text, 3)) == [["12", "30", UUID0]]
    assert list(csv_rows(text, 2)) == [["13", "5"]]


def test_compute_apps_sum_a_process_over_devices_and_skip_hidden_figures() -> None:
    text = "pid, used_memory\n100, 1024\n100, 512.5\n200, [N/A]\n300, 1\n"
    assert parse_compute_apps(text) == {100: 1024 * MiB + int(512.5 * MiB), 300: MiB}


def test_apps_by_gpu_keep_a_process_whose_figure_is_hidden() -> None:
    text = f"100, 1024, {UUID0}\n200, [N/A], {UUID1}\nx, 1, {UUID1}\n"
    assert parse_apps_by_gpu(text) == [(100, 1024 * MiB, UUID0), (200, 0, UUID1)]
