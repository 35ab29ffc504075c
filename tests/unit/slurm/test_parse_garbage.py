"""scontrol answers that are garbage (a site's wrapper, a broken pipe, a hostile fake on PATH): the records
around a giant line still parse, and the giant line is skipped by its length, not scanned (a 50 MB line held
the GIL for ~8 s, freezing the gateway's event loop while its parse thread ran). Also: frontdesk's recovery tag
is the last word of --comment, after a user's own."""

from __future__ import annotations

from frontdesk.backends.slurm.parse import MAX_RECORD_CHARS, parse_scontrol_jobs


def test_a_giant_line_is_skipped_and_its_neighbours_parse() -> None:
    text = (
        "JobId=7 JobName=a JobState=RUNNING\n"
        + "JobId=8 Comment="
        + "A" * (MAX_RECORD_CHARS + 10)
        + "\n"
        + "\x00\xff garbage === \n"
        + "JobId=9 JobName=c JobState=PENDING\n"
    )
    records = parse_scontrol_jobs(text)
    assert [r["JobId"] for r in records] == ["7", "9"]


def test_the_tag_ends_a_users_comment_in_either_spelling() -> None:
    from frontdesk.backends.slurm.render import _tagged

    assert _tagged(["--comment=my run"], "fd-1.1@g") == ["--comment=my run fd-1.1@g"]
    assert _tagged(["--comment", "my run", "--nice=5"], "fd-1.1@g") == ["--comment", "my run fd-1.1@g", "--nice=5"]
    assert _tagged(["--nice=5"], "fd-1.1@g") == ["--comment=fd-1.1@g", "--nice=5"]
