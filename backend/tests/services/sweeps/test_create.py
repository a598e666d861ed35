"""Creating a sweep (services/sweeps/create.py): its members expanded from the parameters, each
config validated whole; a bad member refused with its index, its values and the field, and
nothing created; then one row per member, named and indexed in order, none started at submit
(the scheduler keeps to max_parallel), and the scheduler woken once."""

from __future__ import annotations

from typing import Any

import pytest
from harness import TEST_NODE, statements_run
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from gpudeck.engine.kinds import get_kind
from gpudeck.models import Allocation, Job, Sweep
from gpudeck.schemas.sweeps import SweepCreate
from gpudeck.services.errors import Conflict, InvalidInput, TooLarge
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.sweeps.create import create_sweep, expand

GIB = 1024**3
MIB = 1024**2
CONFIG = {"steps": 10, "batch_size": 64, "lr": 1e-3}


def _sweep(
    parameters: dict[str, Any], job: dict[str, Any] | None = None, **extra: Any
) -> SweepCreate:
    base = {"kind": "sae", "config": CONFIG, "count": 1, "node": TEST_NODE}
    return SweepCreate.model_validate(
        {"job": base | (job or {}), "parameters": parameters, **extra}
    )


def _script(memory: list[int], devices: list[int]) -> SweepCreate:
    """A script sweep: its estimate is the memory it declares, so no trace is needed."""
    job = {
        "kind": "script",
        "config": {"entrypoint": "train.py"},
        "devices": [{"node": TEST_NODE, "index": i} for i in devices],
        "count": None,
        "node": None,
    }
    return _sweep({"grid": {"memory_per_device_bytes": memory}}, job)


def _count(db: Session, model: type[Job] | type[Sweep] | type[Allocation]) -> int:
    return int(db.scalar(select(func.count()).select_from(model)) or 0)


def test_members_are_the_grid_in_order_each_config_whole() -> None:
    planned = expand(_sweep({"grid": {"lr": [1e-3, 1e-2], "batch_size": [64, 128]}}))
    assert [values for values, _ in planned] == [
        {"lr": 1e-3, "batch_size": 64},
        {"lr": 1e-3, "batch_size": 128},
        {"lr": 1e-2, "batch_size": 64},
        {"lr": 1e-2, "batch_size": 128},
    ]
    defaults = get_kind("sae").config_model().model_dump(mode="json")  # type: ignore[union-attr]
    for values, config in planned:
        assert config == defaults | {"steps": 10} | values  # validated: the kind's defaults in


def test_a_bad_member_is_named_by_index_values_and_field() -> None:
    spec = _sweep({"grid": {"batch_size": [64, 63]}}, {"count": 2})
    with pytest.raises(InvalidInput) as bad:
        expand(spec)
    ((field, why),) = bad.value.extra["errors"]
    assert field == "members[1].config.batch_size"
    assert why.endswith("(member 1: batch_size=63)") and "2 devices" in why


def test_more_members_than_a_sweep_may_have_is_too_large() -> None:
    with pytest.raises(TooLarge) as large:
        expand(_sweep({"grid": {"lr": [i / 1e4 for i in range(1, 41)], "seed": list(range(26))}}))
    assert (large.value.code, large.value.field) == ("too_many_members", "parameters")
    assert "1040 members" in large.value.message


def test_members_are_rows_in_index_order_that_wait_and_wake_the_scheduler_once(
    db: Session, devices: str
) -> None:
    spec = _sweep({"grid": {"lr": [i / 1e4 for i in range(1, 13)]}}, name="lrs", max_parallel=2)
    with statements_run(db.get_bind()) as statements:
        sweep = create_sweep(db, spec, owner=Submitter("alice"))
    db.commit()
    assert (sweep.name, sweep.owner, sweep.kind, sweep.max_parallel) == ("lrs", "alice", "sae", 2)
    assert sum("pg_notify" in s for s in statements) == 1
    members = list(db.scalars(select(Job).where(Job.sweep_id == sweep.id).order_by(Job.id)))
    # Ids follow indices (the queue's tie-break); names pad the index to the widest.
    assert [m.sweep_index for m in members] == list(range(12))
    assert [m.name for m in members[:2]] == ["lrs-00", "lrs-01"] and members[-1].name == "lrs-11"
    assert [m.sweep_params for m in members[:2]] == [{"lr": 1e-4}, {"lr": 2e-4}]
    assert all(m.config["lr"] == m.sweep_params["lr"] for m in members)  # type: ignore[index]
    assert _count(db, Allocation) == 0  # eight free devices, yet none starts at submit


def test_a_sweep_that_may_not_wait_is_refused_whole(db: Session, devices: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        create_sweep(db, _sweep({"grid": {"lr": [1e-3]}}, {"queue": False}), owner=Submitter("a"))
    assert refused.value.field == "job.queue"
    db.rollback()
    assert (_count(db, Sweep), _count(db, Job)) == (0, 0)


def test_a_member_its_devices_can_never_hold_is_named_and_nothing_is_created(
    db: Session, devices: str
) -> None:
    db.execute(text("UPDATE devices SET memory_total_bytes = :b WHERE index = 1"), {"b": GIB})
    db.commit()
    who = Submitter("alice")
    # Past every device named: the member's config is the field at fault.
    with pytest.raises(InvalidInput) as never:
        create_sweep(db, _script([256 * MIB, 100 * GIB], [0, 1]), owner=who)
    db.rollback()
    assert never.value.field == "members[1].config"
    assert "does not fit" in never.value.message
    assert "(member 1: memory_per_device_bytes=107374182400)" in never.value.message
    # Past the small device only: a conflict about where it runs, prefixed with the member.
    with pytest.raises(Conflict) as small:
        create_sweep(db, _script([256 * MIB, 2 * GIB], [0, 1]), owner=who)
    db.rollback()
    assert small.value.code == "insufficient_memory"
    assert small.value.message.startswith("member 1 (memory_per_device_bytes=2147483648): ")
    assert (_count(db, Sweep), _count(db, Job)) == (0, 0)
    fits = create_sweep(db, _script([256 * MIB, 384 * MIB], [0, 1]), owner=who)
    db.commit()
    assert _count(db, Job) == 2 and fits.kind == "script"
