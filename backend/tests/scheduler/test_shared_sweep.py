"""Acceptance 2 of issue 37, as far as placement: a sweep of 8 small members with share on 2
simulated 80 GiB devices is placed 4 members a device by one scheduler pass (throttled by
max_parallel when lower); the same sweep without share, 2 at once."""

from __future__ import annotations

from collections import Counter

import pytest
from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.schemas.sweeps import SweepCreate
from gpudeck.services.queue.passes import run_pass, start
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.sweeps.create import create_sweep

GiB = 1024**3


def _sweep(db: Session, share: str, max_parallel: int) -> Counter[int]:
    job = {
        "kind": "script",
        "config": {"entrypoint": "train.py", "memory_per_device_bytes": 18 * GiB},
        "count": 1,
        "node": TEST_NODE,
        "share": share,
    }
    seeds = [["--seed", str(i)] for i in range(8)]
    spec = SweepCreate.model_validate(
        {"job": job, "parameters": {"grid": {"args": seeds}}, "max_parallel": max_parallel}
    )
    create_sweep(db, spec, owner=Submitter("ada"))
    db.commit()
    for decision in run_pass(db, None, half_life_s=3600).plan.starts:
        assert start(db, decision)
    db.commit()
    rows = db.execute(text("SELECT gpu_index FROM allocations WHERE released_at IS NULL"))
    return Counter(index for (index,) in rows)


@pytest.mark.parametrize(
    ("share", "max_parallel", "per_device"),
    [("memory", 8, {0: 4, 1: 4}), ("memory", 3, {0: 3}), ("exclusive", 8, {0: 1, 1: 1})],
)
def test_a_shared_sweep_packs_four_members_a_device(
    db: Session, share: str, max_parallel: int, per_device: dict[int, int]
) -> None:
    register_devices(db, "2x80GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    db.commit()
    assert _sweep(db, share, max_parallel) == per_device
