"""Which GRES types of a cluster's partition a job's estimate fits, and the one a submit would
ask Slurm for, before anything is submitted (GET /api/clusters/{name}/gpu-types). Reads the
same cached facts and applies the same rule as the submit (cluster_target), so the answer is
what the submit does: when Slurm does not answer, the configured types are listed with their
counts unknown, and the submit asks for any type, as it would then."""

from __future__ import annotations

from gpudeck.models import Cluster
from gpudeck.schemas.clusters import GpuTypePublic, GpuTypesPublic
from gpudeck.services.executors.clusters import ClientFor, slurm_client
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit.cluster_target import (
    FACTS,
    FactsRead,
    choose_gpu_type,
    fits,
    known_partition,
    partition_gpus,
    partition_of,
    partition_types,
)


def gpu_types(
    cluster: Cluster,
    partition: str | None,
    estimate: int | None,
    client_for: ClientFor = slurm_client,
) -> GpuTypesPublic:
    """The partition's types (default: the cluster's first partition) against `estimate`
    bytes per device; a 422 naming `partition` when it is not the cluster's or Slurm's."""
    chosen = partition_of(cluster, partition)
    return type_table(cluster, chosen, FACTS.read(cluster, client_for), estimate)


def type_table(
    cluster: Cluster, partition: str, read: FactsRead, estimate: int | None
) -> GpuTypesPublic:
    memory = cluster.gpu_memory or {}
    counts: dict[str | None, int | None]
    if read.facts is None:  # the submit checks no type then: any will do
        counts, types = dict.fromkeys(sorted(memory)), {}
    else:
        known_partition(read.facts, partition)
        counts = dict(partition_gpus(read.facts, partition))
        types = partition_types(read.facts, partition, memory)
    choice = choose_gpu_type(partition, types, estimate)
    return GpuTypesPublic(
        cluster=cluster.name,
        partition=partition,
        estimate_bytes=estimate,
        reachable=read.facts is not None,
        cause=read.cause,
        types=[_row(t, n, memory, estimate) for t, n in sorted(counts.items(), key=_by_name)],
        gpu_type=choice.gpu_type,
        refusal=choice.refusal,
    )


def _row(
    gres: str | None, count: int | None, memory: dict[str, int], estimate: int | None
) -> GpuTypePublic:
    bytes_ = memory.get(gres) if gres is not None else None
    return GpuTypePublic(
        type=gres,
        memory_bytes=bytes_,
        usable_bytes=None if bytes_ is None else usable_when_idle(bytes_),
        count=count,
        fits=None if bytes_ is None or estimate is None else fits(bytes_, estimate),
    )


def _by_name(item: tuple[str | None, int | None]) -> tuple[bool, str]:
    return (item[0] is None, item[0] or "")  # untyped GPUs last
