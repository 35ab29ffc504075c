"""What a user writes into Slurm comes back in `scontrol -o show job` and `sacct -P` unescaped: a job name
with ` JobState=`, a newline, U+2028 or `|` must not pose as a key, a record or a column (pure parsing)."""

from __future__ import annotations

from frontdesk.backends.slurm.parse import checked_jobs, parse_sacct, parse_scontrol_jobs, sacct_to_statuses

REST = "UserId=ada(1000) GroupId=ada(1000) Priority=1 QOS=normal JobState={state} Reason=None ExitCode=0:0"
TAIL = "WorkDir=/tmp StdErr=/tmp/e StdIn=/dev/null StdOut=/tmp/o Power="


def _line(job_id: str, name: str, state: str = "PENDING", workdir: str = "/tmp") -> str:
    return f"JobId={job_id} JobName={name} {REST.format(state=state)} {TAIL.replace('/tmp', workdir, 1)}"


def test_a_name_holding_keys_is_the_name_and_the_state_is_slurms() -> None:
    (rec,) = parse_scontrol_jobs(_line("40", "x JobState=COMPLETED ExitCode=1:0 ArrayJobId=3"))
    assert rec["JobName"] == "x JobState=COMPLETED ExitCode=1:0 ArrayJobId=3"
    assert (rec["JobState"], rec["ExitCode"], rec["UserId"]) == ("PENDING", "0:0", "ada(1000)")
    assert "ArrayJobId" not in rec


def test_a_path_holding_keys_is_the_path() -> None:
    (rec,) = parse_scontrol_jobs(_line("41", "n", workdir="/tmp/a JobState=FAILED"))
    assert (rec["WorkDir"], rec["JobState"]) == ("/tmp/a JobState=FAILED", "PENDING")


def test_a_newline_in_a_name_cannot_pose_as_another_jobs_record() -> None:
    victim = _line("5", "victim")
    attacker = _line("37", "tp2nl\nJobId=5 JobName=forged JobState=COMPLETED", state="RUNNING")
    records, suspect = checked_jobs(victim + "\n" + attacker + "\n")
    assert [(r["JobId"], r["JobName"], r["JobState"]) for r in records] == [("5", "victim", "PENDING")]
    assert suspect == {"37"}


def test_a_job_id_on_two_lines_is_asked_again_alone() -> None:
    forged_head = "JobId=37 JobName=a JobState=RUNNING UserId=x(1)"  # the name faked a whole record
    text = _line("5", "victim") + "\n" + forged_head + "\n" + _line("5", "forged", state="COMPLETED") + "\n"
    records, suspect = checked_jobs(text)
    assert "5" not in {r["JobId"] for r in records} and "5" in suspect


def test_unicode_line_separators_in_a_name_split_nothing() -> None:
    for sep in ("\u2028", "\x1c", "\x85", "\r"):
        text = _line("6", f"a{sep}JobId=5 JobName=forged JobState=COMPLETED") + "\n"
        records, suspect = checked_jobs(text)
        assert [r["JobId"] for r in records] == ["6"] and not suspect, repr(sep)


def test_sacct_reads_no_user_text_so_a_row_cannot_be_forged() -> None:
    """sacct prints a `|` and a newline in a job name as they are: with JobName asked for, a name
    `x\n5|COMPLETED|0:0|...` printed a whole row for job 5. No field asked for is a user's now, and a line that
    is not exactly one row (a job id, then the fields) is dropped."""
    row = "77|COMPLETED|0:0|2026-12-03T10:00:00|2026-12-03T10:00:01|2026-12-03T10:00:02|cpu1|00:01.000|1M"
    (parsed,) = parse_sacct(row + "\n")
    assert "JobName" not in parsed and parsed["State"] == "COMPLETED"
    st = sacct_to_statuses([parsed])["77"]
    assert (st.state.value, st.exit_code, st.node) == ("COMPLETED", 0, "cpu1")
    forged = "5|COMPLETED|0:0|2026-12-03T10:00:00|2026-12-03T10:00:01|2026-12-03T10:00:02|cpu1|00:01.000|1M"
    for junk in (f"x|{forged}", f"x{forged}", f"{forged}|extra", "77 |" + forged.split("|", 1)[1], "5\u2028|x"):
        assert parse_sacct(junk + "\n" + row) == [parsed], junk
