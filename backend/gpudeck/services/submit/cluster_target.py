"""Where a job submitted to a Slurm cluster may run, checked at submit against what the cluster
says: the cluster and partition exist, some node of the partition has the GPUs a node of the job
needs, the partition has the nodes, and the time limit is within the partition's. Slurm places
the job itself; these checks only refuse, before anything is submitted, what Slurm would refuse
or keep pending forever. Takes a Session, never commits.

The cluster's facts (partitions, nodes and their GPUs) are read with one bounded command each
and kept for FACTS_TTL_S: a sweep's thousand members, or a burst of submits, ask Slurm once.
When Slurm does not answer, the checks that need it are skipped (sbatch refuses later, and the
job fails with Slurm's own words): a submit never waits on a silent cluster.

The GRES type a job asks for is decided by one function, choose_gpu_type, which the submit and
the form's view of a partition's types (gpu_types.py) both call over the same facts."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from gpudeck.models import Cluster
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.errors import InvalidInput
from gpudeck.services.executors.clusters import (
    READ_TIMEOUT_S,
    ClientFor,
    ClusterNotFound,
    get_cluster,
    slurm_client,
)
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.slurm import NodeInfo, PartitionInfo, SlurmError

FACTS_TTL_S = 30.0
GIB = 1024**3


@dataclass(frozen=True)
class ClusterFacts:
    partitions: dict[str, PartitionInfo]
    nodes: list[NodeInfo]


@dataclass(frozen=True)
class FactsRead:
    facts: ClusterFacts | None  # None: Slurm did not answer
    cause: str | None  # why not


@dataclass
class _FactsCache:
    lock: threading.Lock = field(default_factory=threading.Lock)
    kept: dict[str, tuple[float, FactsRead]] = field(default_factory=dict)

    def get(self, cluster: Cluster, client_for: ClientFor) -> ClusterFacts | None:
        return self.read(cluster, client_for).facts

    def read(self, cluster: Cluster, client_for: ClientFor) -> FactsRead:
        """The cluster's facts, read at most once per FACTS_TTL_S, with why they are missing."""
        with self.lock:
            kept = self.kept.get(cluster.name)
            if kept is not None and time.monotonic() - kept[0] < FACTS_TTL_S:
                return kept[1]
        read = _read_facts(cluster, client_for)
        with self.lock:
            self.kept[cluster.name] = (time.monotonic(), read)
        return read

    def forget(self) -> None:
        with self.lock:
            self.kept.clear()


FACTS = _FactsCache()


def _read_facts(cluster: Cluster, client_for: ClientFor) -> FactsRead:
    client = client_for(cluster, READ_TIMEOUT_S)
    try:
        partitions = {p.name: p for p in client.partitions()}
        return FactsRead(ClusterFacts(partitions, client.nodes()), None)
    except SlurmError as exc:
        return FactsRead(None, str(exc))


def partition_gpus(facts: ClusterFacts, partition: str) -> Counter[str | None]:
    """The partition's GPUs by GRES type (None: GPUs the site gives no type), over its nodes."""
    gpus: Counter[str | None] = Counter()
    for node in facts.nodes:
        if partition in node.partitions:
            for gres in node.gpus:
                gpus[gres.type] += gres.count
    return gpus


def partition_types(
    facts: ClusterFacts, partition: str, memory: Mapping[str, int]
) -> dict[str, int]:
    """The partition's GRES types whose memory the cluster configures -> bytes."""
    present = partition_gpus(facts, partition)
    return {t: m for t, m in memory.items() if t in present}


def fits(memory_bytes: int, estimate: int) -> bool:
    """A GPU of this memory holds a job of this estimate per device, when idle."""
    return usable_when_idle(memory_bytes) >= estimate


@dataclass(frozen=True)
class TypeChoice:
    gpu_type: str | None  # the GRES type to ask Slurm for; None: any will do
    refusal: str | None  # why no type fits (a submit's 422 on `config`); None: one does


def choose_gpu_type(partition: str, types: Mapping[str, int], estimate: int | None) -> TypeChoice:
    """The one rule for the GRES type a job asks for: any (None) when no estimate, the types'
    memory unknown, or every type fits; the smallest that fits when some do not (the big ones
    stay for the jobs that need them); none, with why, when no type fits."""
    if estimate is None or not types:
        return TypeChoice(None, None)
    fitting = {t: m for t, m in types.items() if fits(m, estimate)}
    if len(fitting) == len(types):
        return TypeChoice(None, None)
    if not fitting:
        known = ", ".join(
            f"{t} ({m / GIB:.0f} GiB, {usable_when_idle(m) / GIB:.1f} usable)"
            for t, m in sorted(types.items())
        )
        why = (f"needs {estimate / GIB:.2f} GiB per device: no GPU type of partition "
               f"{partition} fits it ({known})")  # fmt: skip
        return TypeChoice(None, why)
    return TypeChoice(min(fitting, key=lambda t: (fitting[t], t)), None)


@dataclass(frozen=True)
class ClusterTarget:
    """A job's place on a cluster, in the shape the submit pipeline reads (as Placement)."""

    cluster: Cluster
    partition: str
    nodes_requested: int
    max_time_s: int | None  # the partition's, when Slurm said
    # The partition's GRES types whose memory the cluster configures -> bytes (empty: unknown).
    gpu_types: dict[str, int] = field(default_factory=dict)
    named: tuple[()] = ()
    spread: None = None
    spread_nodes: None = None
    field: str = "count"

    @property
    def node(self) -> str:
        return self.cluster.name

    @property
    def nodes(self) -> list[str]:
        return [self.cluster.name]

    def home_node(self, spec: JobCreate, estimate: int | None) -> str:
        """The cluster, once a GRES type its estimate fits is known to exist (`force` skips
        the check, as on GPUDeck's own nodes)."""
        if not spec.force:
            self.gpu_type_for(estimate, refuse=True)
        return self.cluster.name

    def gpu_type_for(self, estimate: int | None, *, refuse: bool = False) -> str | None:
        """The GRES type to ask Slurm for (choose_gpu_type); None when any will do, or when
        none fits and the job is forced (Slurm may place it anywhere); a 422 when none fits
        and `refuse`."""
        choice = choose_gpu_type(self.partition, self.gpu_types, estimate)
        if choice.refusal is not None and refuse:
            raise InvalidInput([("config", choice.refusal)])
        return choice.gpu_type

    def job_columns(self, estimate: int | None) -> dict[str, Any]:
        view: dict[str, Any] = {
            "partition": self.partition,
            "nodes_requested": self.nodes_requested,
        }
        if (gpu_type := self.gpu_type_for(estimate)) is not None:
            view["gpu_type"] = gpu_type
        return {"cluster_id": self.cluster.id, "slurm": view}

    def time_limit(self, asked_s: int | None, default_s: int) -> int:
        """The job's time limit: as asked, which must be within the partition's; none asked,
        the configured default capped at the partition's."""
        if asked_s is None:
            return min(default_s, self.max_time_s or default_s)
        if self.max_time_s is not None and asked_s > self.max_time_s:
            raise InvalidInput(
                [("time_limit_s", f"{asked_s} s is over partition {self.partition}'s time "
                  f"limit of {self.max_time_s} s")]
            )  # fmt: skip
        return asked_s


def resolve(
    session: Session, spec: JobCreate, client_for: ClientFor = slurm_client
) -> ClusterTarget:
    """The cluster target of a spec with `cluster`, refusing what the cluster cannot run."""
    assert spec.cluster is not None
    try:
        cluster = get_cluster(session, spec.cluster)
    except ClusterNotFound:  # it names `name`: a submit names `cluster`
        raise InvalidInput([("cluster", f"no cluster {spec.cluster!r}")]) from None
    partition = partition_of(cluster, spec.partition)
    count = int(spec.count or 0)
    nodes = spec.nodes or (count // spec.devices_per_node if spec.devices_per_node else 1)
    facts = FACTS.get(cluster, client_for)
    max_time_s, types = None, {}
    if facts is not None:
        max_time_s = _check_partition(facts, partition, nodes, count // nodes)
        types = partition_types(facts, partition, cluster.gpu_memory or {})
    return ClusterTarget(cluster, partition, nodes, max_time_s, types)


def partition_of(cluster: Cluster, asked: str | None) -> str:
    """The partition asked for (default: the cluster's first), once it is one of the cluster's."""
    partition = asked or cluster.partitions[0]
    if partition not in cluster.partitions:
        raise InvalidInput(
            [("partition", f"{partition!r} is not one of cluster {cluster.name}'s partitions "
              f"({', '.join(cluster.partitions)})")]
        )  # fmt: skip
    return partition


def known_partition(facts: ClusterFacts, partition: str) -> PartitionInfo:
    """Slurm's partition, or a 422 naming `partition` and what Slurm has."""
    info = facts.partitions.get(partition)
    if info is None:
        known = ", ".join(sorted(facts.partitions)) or "none"
        why = f"Slurm has no partition {partition!r} (it has {known})"
        raise InvalidInput([("partition", why)])
    return info


def _check_partition(facts: ClusterFacts, partition: str, nodes: int, per_node: int) -> int | None:
    info = known_partition(facts, partition)
    gpus = [sum(g.count for g in n.gpus) for n in facts.nodes if partition in n.partitions]
    most = max(gpus, default=0)
    if per_node > most:
        count = per_node * nodes
        # The fewest nodes that split the count evenly within what the partition's nodes hold.
        spread = next(
            (m for m in range(nodes + 1, len(gpus) + 1)
             if count % m == 0 and sum(1 for g in gpus if g >= count // m) >= m),
            None,
        )  # fmt: skip
        hint = f"; spread it: nodes={spread}" if spread else ""
        why = f"{per_node} GPUs on one node: partition {partition}'s nodes have at most {most} each"
        raise InvalidInput([("count", why + hint)])
    able = sum(1 for g in gpus if g >= per_node)
    if nodes > able:
        why = f"{nodes} nodes with {per_node} GPUs each: partition {partition} has {able}"
        raise InvalidInput([("nodes", why)])
    return info.max_time_s
