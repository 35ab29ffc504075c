"""Job contexts, request changes and fixes, resource advice, and the membership configuration."""

from __future__ import annotations

import pytest

from frontdesk.errors import ConfigError
from frontdesk.memory.advice import advise, advise_template
from frontdesk.memory.context import context_of, fix_applied, request_changes, template_of
from frontdesk.memory.scopes import Membership

G = 1024**3


def test_template_folds_home_dirs_and_whitespace() -> None:
    assert template_of({"command": ["python", "/home/bob/a b.py", "--x", "1"]}) == "python ~/a b.py --x 1"
    script = {"script": "#!/bin/bash\n  srun   /Users/z/bin/app  \n"}
    assert template_of(script) == "#!/bin/bash srun ~/bin/app"


@pytest.mark.parametrize(
    ("spec", "app"),
    [
        ({"command": ["python", "-u", "/home/a/train.py"]}, "train.py"),
        ({"command": ["torchrun", "--nproc_per_node", "4", "train.py"]}, "train.py"),
        ({"command": ["gmx", "mdrun", "-deffnm", "md"]}, "gmx"),
        ({"command": ["/opt/gromacs/bin/gmx_mpi", "mdrun"]}, "gmx_mpi"),
        (
            {"script": "#!/bin/bash\n#SBATCH -N 2\nmodule load gcc/12\ncd $HOME\nexport X=1\nsrun ./lmp -in in.lj\n"},
            "lmp",
        ),
    ],
)
def test_application(spec: dict, app: str) -> None:
    assert context_of(spec).application == app


def test_modules_from_script_and_env_give_conditions() -> None:
    c = context_of(
        {"script": "module load gcc/12.2 openmpi/4.1.5\nml cuda/12.4\n./a\n"}, env={"LOADEDMODULES": "python/3.11"}
    )
    assert c.modules == ["cuda/12.4", "gcc/12.2", "openmpi/4.1.5", "python/3.11"]
    assert c.conditions["versions"]["openmpi"] == "4.1.5"


def test_request_changes_and_fix_applied() -> None:
    before = context_of({"command": ["x"], "resources": {"memory": 4 * G}, "pool": "short"}).requested
    after = context_of({"command": ["x"], "resources": {"memory": 16 * G}, "pool": "long"}).requested
    changes = request_changes(before, after)
    assert changes == {"memory_bytes": [4 * G, 16 * G], "partition": ["short", "long"]}
    assert fix_applied(changes, after)
    assert not fix_applied(changes, before)
    assert fix_applied({"memory_bytes": [4 * G, 16 * G]}, {"memory_bytes": 8 * G})  # moved the fix's way
    assert not fix_applied({"memory_bytes": [4 * G, 16 * G]}, {"memory_bytes": 2 * G})
    assert fix_applied({"memory_bytes": [4 * G, 16 * G]}, {"memory_bytes": None})  # no limit at all
    assert fix_applied({"gpus": [8, 2]}, {"gpus": 1})


def _run(state: str, **kw: object) -> dict:
    req = {
        "memory_bytes": kw.get("mem", 64 * G),
        "cpus": kw.get("cpus", 1),
        "gpus": kw.get("gpus", 0),
        "walltime_s": kw.get("wall", 3600),
    }
    used = {
        "peak_rss_bytes": kw.get("peak"),
        "run_s": kw.get("run_s", 3000),
        "cpu_seconds": kw.get("cpu_s"),
        "gpu_util_percent": kw.get("util"),
    }
    return {"template": "t", "application": "app", "state": state, "requested": req, "used": used}


def test_advice_asked_for_8_gpus_used_2() -> None:
    advice = advise_template([_run("COMPLETED", gpus=8, util=24.0, peak=60 * G)])
    assert advice is not None
    assert "asked for 8 GPUs, used 2" in advice["lines"]
    assert advice["suggest"]["gpus"] == 2


def test_advice_memory_walltime_cpus_and_nothing_to_say() -> None:
    [item] = advise([_run("COMPLETED", mem=64 * G, peak=3 * G, wall=86400, run_s=1800, cpus=16, cpu_s=3600)])
    assert item["suggest"] == {"memory_bytes": 4 * G, "walltime_s": 3600, "cpus": 2}
    assert item["lines"][0] == "asked for 64G memory, used at most 3G: request 4G"
    assert advise([_run("COMPLETED", mem=4 * G, peak=3 * G)]) == []
    assert advise([_run("OUT_OF_MEMORY", mem=4 * G)]) == []


def test_advice_never_suggests_less_than_what_ran_out_of_memory() -> None:
    runs = [_run("COMPLETED", mem=64 * G, peak=3 * G), _run("OUT_OF_MEMORY", mem=8 * G)]
    [item] = advise(runs)
    assert item["suggest"]["memory_bytes"] == 12 * G


def test_membership_config() -> None:
    m = Membership.from_section({"labs": {"physics": ["alice"], "solo": "zed"}, "unix_groups": False})
    assert m.scopes("alice") == [("user", "alice"), ("lab", "physics"), ("cluster", "*")]
    assert m.scopes("zed")[1] == ("lab", "solo")
    assert m.may_write("alice", "lab", "physics") and not m.may_write("zed", "lab", "physics")
    assert not m.may_write("alice", "cluster", "*") and m.may_write("root", "cluster", "*")
    with pytest.raises(ConfigError, match=r"\[memory.labs\].bad"):
        Membership.from_section({"labs": {"bad": 3}})


def test_mcp_memory_search_lines_carry_the_next_step() -> None:
    from frontdesk.mcp_server import lesson_lines

    got = {
        "lessons": [
            {
                "id": 3,
                "kind": "missing_import",
                "cause": "a Python module is not installed: flash_attn",
                "fix": None,
                "next_step": "install `flash_attn` in the job's environment",
                "scope": "user",
            }
        ]
    }
    assert "next: install `flash_attn`" in lesson_lines(got)
