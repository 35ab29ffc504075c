"""`aftercorr` naming another user's array in non-ASCII digits (`١` is 1 to Python's int()) skipped the access
check (api/depends.py takes only ASCII digits as an id) while the array's acceptance looked the id up anyway:
bob learnt that alice's private array exists and how many tasks it has, and could chain his tasks onto hers.
Now such a reference is a name of bob's own, like any other non-ASCII text."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _array(size: int, **extra: Any) -> dict[str, Any]:
    spec = {"command": ["sleep", "300"], "workdir": "/tmp", "array": f"1-{size}", **extra}
    return {"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp", "env": {}}}}


def test_aftercorr_in_other_digits_names_no_array_of_another_user(facility: Facility) -> None:
    status, hers = facility.probe("alice", [_array(3)])[0]
    assert status == 200, hers
    try:
        spelt = str(hers["id"]).translate(ARABIC_INDIC)
        for size in (2, 3):  # a size that differs (her size in the error) and the same (his tasks on hers)
            status, answer = facility.probe("bob", [_array(size, aftercorr=spelt)])[0]
            assert status != 200, answer  # before: accepted, his tasks waiting on hers
            assert "3 tasks" not in str(answer) and str(hers["id"]) not in str(answer), answer
        status, answer = facility.probe("bob", [_array(3, aftercorr=hers["id"])])[0]
        assert status == "forbidden", answer  # the ASCII id: refused, as before
    finally:
        facility.root_client().request("POST", f"/v1/jobs/{hers['id']}/cancel")
