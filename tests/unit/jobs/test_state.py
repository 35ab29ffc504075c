"""JobState: every member documented, one terminal set, the Slurm table complete and re-exported."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from frontdesk.backends import base
from frontdesk.backends.slurm import parse
from frontdesk.jobs import state as state_mod
from frontdesk.jobs.state import SLURM_STATES, TERMINAL_STATES, UNFINISHED_STATES, JobState


def test_every_member_has_a_docstring() -> None:
    tree = ast.parse(inspect.getsource(state_mod))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "JobState")
    documented = set()
    body = cls.body
    for stmt, nxt in zip(body, body[1:], strict=False):
        if isinstance(stmt, ast.Assign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            target = stmt.targets[0]
            assert isinstance(target, ast.Name)
            documented.add(target.id)
    assert documented == {s.name for s in JobState}


def test_terminal_set_and_property_agree() -> None:
    assert {s for s in JobState if s.terminal} == TERMINAL_STATES
    assert not ({JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED} & TERMINAL_STATES)


def test_unfinished_is_every_state_not_terminal_in_declaration_order() -> None:
    assert set(UNFINISHED_STATES) == set(JobState) - TERMINAL_STATES
    assert list(UNFINISHED_STATES) == [s for s in JobState if not s.terminal]
    assert {JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED} <= set(UNFINISHED_STATES)


def test_the_unfinished_set_is_named_once() -> None:
    # Store, retention, quotas and the agents store once each wrote their own; a state added to the enum must land
    # in every `state IN (...)` at once, so no module but state.py derives the set from the enum.
    src = Path(state_mod.__file__).parents[1]
    derived = []
    for path in src.rglob("*.py"):
        if path == Path(state_mod.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
                gens = node.generators
                if any(isinstance(g.iter, ast.Name) and g.iter.id == "JobState" and g.ifs for g in gens):
                    derived.append(f"{path.relative_to(src)}:{node.lineno}")
    assert derived == []


def test_every_state_of_ours_that_slurm_can_report_is_in_the_table() -> None:
    # Slurm's own names map to themselves; the only state Slurm never reports is ours alone.
    for s in JobState:
        if s is JobState.DEPENDENCY_NEVER_SATISFIED:
            assert s.value not in SLURM_STATES
            continue
        assert SLURM_STATES[s.value] is s


def test_one_table_re_exported_where_old_code_imports_it() -> None:
    assert parse.SLURM_STATES is SLURM_STATES
    assert base.JobState is JobState and base.TERMINAL_STATES is TERMINAL_STATES
    assert parse.parse_state("CANCELLED by 0") is JobState.CANCELLED
    assert parse.parse_state("completing") is JobState.RUNNING
    assert parse.parse_state("NO_SUCH_STATE") is None
