"""The GRES type a job on a Slurm cluster asks for, from its estimate and the types' memory the
cluster configures (services/submit/cluster_target.py); the cluster's own checks run against the
real test cluster in tests/slurm/."""

from __future__ import annotations

import pytest

from gpudeck.models import Cluster
from gpudeck.services.errors import InvalidInput
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit.cluster_target import ClusterTarget

GIB = 1024**3


def target(**types: int) -> ClusterTarget:
    cluster = Cluster(id=1, name="lab", partitions=["gpu"], gpu_memory=types)
    return ClusterTarget(cluster, "gpu", 1, None, dict(types))


def test_no_type_is_asked_for_when_any_will_do() -> None:
    assert target().gpu_type_for(30 * GIB, refuse=True) is None  # memory unknown
    assert target(a100=80 * GIB, h100=80 * GIB).gpu_type_for(30 * GIB, refuse=True) is None
    assert target(a100=80 * GIB).gpu_type_for(None, refuse=True) is None  # no estimate


def test_the_smallest_type_that_fits_is_asked_for_when_some_do_not() -> None:
    mixed = target(t4=16 * GIB, a100=40 * GIB, h100=80 * GIB)
    assert mixed.gpu_type_for(20 * GIB) == "a100"
    assert mixed.gpu_type_for(usable_when_idle(40 * GIB) + 1) == "h100"
    assert mixed.job_columns(20 * GIB)["slurm"]["gpu_type"] == "a100"
    assert "gpu_type" not in mixed.job_columns(10 * GIB)["slurm"]


def test_an_estimate_no_type_fits_is_refused_naming_config_and_every_type() -> None:
    small = target(t4=16 * GIB, a10=24 * GIB)
    with pytest.raises(InvalidInput) as refused:
        small.gpu_type_for(30 * GIB, refuse=True)
    [(field, message)] = refused.value.extra["errors"]
    assert field == "config"
    assert message.startswith("needs 30.00 GiB per device: no GPU type of partition gpu fits")
    assert "a10 (24 GiB" in message and "t4 (16 GiB" in message
    assert small.gpu_type_for(30 * GIB) is None  # forced: Slurm may place it anywhere
