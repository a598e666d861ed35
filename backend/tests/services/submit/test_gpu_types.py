"""A partition's GRES types against an estimate, as GET /api/clusters/{name}/gpu-types shows
them (services/submit/gpu_types.py): the same type, and the same refusal, as the submit's rule,
from facts as Slurm reports them; the real cluster's answer is tested in tests/slurm/."""

from __future__ import annotations

import pytest

from gpudeck.models import Cluster
from gpudeck.schemas.clusters import GpuTypesPublic
from gpudeck.services.errors import InvalidInput
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit.cluster_target import ClusterFacts, ClusterTarget, FactsRead
from gpudeck.services.submit.gpu_types import gpu_types, type_table
from gpudeck.slurm import GpuGres, NodeInfo, PartitionInfo

GIB = 1024**3
MEMORY = {"t4": 16 * GIB, "a100": 40 * GIB, "h100": 80 * GIB}


def node(name: str, partitions: tuple[str, ...], *gpus: tuple[str | None, int]) -> NodeInfo:
    gres = tuple(GpuGres(type=t, count=n, used=0, used_indices=()) for t, n in gpus)
    return NodeInfo(name, "idle", partitions, 8, 0, 64000, 0, gres)


# gpu: 2 t4 + 4 a100 over two nodes, and 2 GPUs the site gives no type; big: 8 h100
FACTS = ClusterFacts(
    {p: PartitionInfo(p, "up", None, None) for p in ("gpu", "big")},
    [
        node("n1", ("gpu",), ("t4", 2), ("a100", 2)),
        node("n2", ("gpu",), ("a100", 2), (None, 2)),
        node("n3", ("big",), ("h100", 8)),
    ],
)
LAB = Cluster(id=1, name="lab", partitions=["gpu", "big"], gpu_memory=MEMORY)


def table(
    estimate: int | None, partition: str = "gpu", read: FactsRead | None = None
) -> GpuTypesPublic:
    return type_table(LAB, partition, read or FactsRead(FACTS, None), estimate)


def test_each_type_of_the_partition_with_its_memory_count_and_fit() -> None:
    shown = table(20 * GIB)
    assert (shown.reachable, shown.cause, shown.partition) == (True, None, "gpu")
    rows = [(t.type, t.memory_bytes, t.count, t.fits) for t in shown.types]
    # only the partition's types; h100 is big's; the untyped GPUs last, memory unknown
    assert rows == [("a100", 40 * GIB, 4, True), ("t4", 16 * GIB, 2, False), (None, None, 2, None)]
    assert shown.types[0].usable_bytes == usable_when_idle(40 * GIB)
    assert (shown.gpu_type, shown.refusal) == ("a100", None)  # the smallest that fits


@pytest.mark.parametrize("estimate", [None, 1 * GIB, 20 * GIB, 30 * GIB, 50 * GIB])
@pytest.mark.parametrize("partition", ["gpu", "big"])
def test_the_type_shown_is_the_one_a_submit_asks_for(estimate: int | None, partition: str) -> None:
    shown = table(estimate, partition)
    types = {t.type: t.memory_bytes for t in shown.types if t.type and t.memory_bytes}
    target = ClusterTarget(LAB, partition, 1, None, types)
    assert shown.gpu_type == target.gpu_type_for(estimate)
    if shown.refusal is None:
        target.gpu_type_for(estimate, refuse=True)  # the submit is not refused either
    else:
        with pytest.raises(InvalidInput) as refused:
            target.gpu_type_for(estimate, refuse=True)
        assert refused.value.extra["errors"] == [("config", shown.refusal)]


def test_any_type_when_all_fit_or_no_estimate_and_a_refusal_when_none_fits() -> None:
    assert table(1 * GIB).gpu_type is None  # every type fits: any will do
    assert [t.fits for t in table(None).types] == [None, None, None]
    assert table(None).gpu_type is None
    none = table(50 * GIB)
    assert none.gpu_type is None and [t.fits for t in none.types] == [False, False, None]
    assert none.refusal is not None
    assert none.refusal.startswith("needs 50.00 GiB per device: no GPU type of partition gpu")


def test_a_silent_cluster_lists_the_configured_types_counts_unknown_and_refuses_nothing() -> None:
    shown = table(50 * GIB, read=FactsRead(None, "scontrol did not answer within 1.0 s"))
    assert (shown.reachable, shown.cause) == (False, "scontrol did not answer within 1.0 s")
    rows = [(t.type, t.count, t.fits) for t in shown.types]
    assert rows == [("a100", None, False), ("h100", None, True), ("t4", None, False)]
    # as the submit: the types present are unknown, so it asks for any and refuses nothing
    assert (shown.gpu_type, shown.refusal) == (None, None)


def test_a_partition_not_the_clusters_or_not_slurms_is_a_422_naming_partition() -> None:
    with pytest.raises(InvalidInput) as not_ours:
        gpu_types(LAB, "debug", 1 * GIB)  # refused before Slurm is asked
    [(field, message)] = not_ours.value.extra["errors"]
    assert field == "partition" and "'debug' is not one of cluster lab's partitions" in message
    gone = ClusterFacts({"gpu": FACTS.partitions["gpu"]}, FACTS.nodes)
    with pytest.raises(InvalidInput) as not_slurms:
        table(1 * GIB, "big", FactsRead(gone, None))
    [(field, message)] = not_slurms.value.extra["errors"]
    assert field == "partition" and "Slurm has no partition 'big' (it has gpu)" in message
