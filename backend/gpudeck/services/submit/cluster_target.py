"""Where a job submitted to a Slurm cluster may run, checked at submit against what the cluster
says: the cluster and partition exist, some node of the partition has the GPUs a node of the job
needs, the partition has the nodes, and the time limit is within the partition's. Slurm places
the job itself; these checks only refuse, before anything is submitted, what Slurm would refuse
or keep pending forever. Takes a Session, never commits.

The cluster's facts (partitions, nodes and their GPUs) are read with one bounded command each
and kept for FACTS_TTL_S: a sweep's thousand members, or a burst of submits, ask Slurm once.
When Slurm does not answer, the checks that need it are skipped (sbatch refuses later, and the
job fails with Slurm's own words): a submit never waits on a silent cluster."""

from __future__ import annotations

import threading
import time
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


@dataclass
class _FactsCache:
    lock: threading.Lock = field(default_factory=threading.Lock)
    read: dict[str, tuple[float, ClusterFacts | None]] = field(default_factory=dict)

    def get(self, cluster: Cluster, client_for: ClientFor) -> ClusterFacts | None:
        with self.lock:
            kept = self.read.get(cluster.name)
            if kept is not None and time.monotonic() - kept[0] < FACTS_TTL_S:
                return kept[1]
        facts = _read_facts(cluster, client_for)
        with self.lock:
            self.read[cluster.name] = (time.monotonic(), facts)
        return facts

    def forget(self) -> None:
        with self.lock:
            self.read.clear()


FACTS = _FactsCache()


def _read_facts(cluster: Cluster, client_for: ClientFor) -> ClusterFacts | None:
    client = client_for(cluster, READ_TIMEOUT_S)
    try:
        partitions = {p.name: p for p in client.partitions()}
        return ClusterFacts(partitions, client.nodes())
    except SlurmError:
        return None


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
        """The GRES type to ask Slurm for: None when any type will do (no estimate, types'
        memory unknown, or every type fits); the smallest that fits when some
        do not (the big ones stay for the jobs that need them); a 422 when none fits and
        `refuse`."""
        if estimate is None or not self.gpu_types:
            return None
        fits = {t: m for t, m in self.gpu_types.items() if usable_when_idle(m) >= estimate}
        if len(fits) == len(self.gpu_types):
            return None
        if not fits and not refuse:
            return None  # forced: Slurm may place it anywhere
        if not fits:
            known = ", ".join(
                f"{t} ({m / GIB:.0f} GiB, {usable_when_idle(m) / GIB:.1f} usable)"
                for t, m in sorted(self.gpu_types.items())
            )
            raise InvalidInput(
                [("config", f"needs {estimate / GIB:.2f} GiB per device: no GPU type of "
                  f"partition {self.partition} fits it ({known})")]
            )  # fmt: skip
        return min(fits, key=lambda t: (fits[t], t))  # the smallest that fits: leave the big

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
    partition = spec.partition or cluster.partitions[0]
    if partition not in cluster.partitions:
        raise InvalidInput(
            [("partition", f"{partition!r} is not one of cluster {cluster.name}'s partitions "
              f"({', '.join(cluster.partitions)})")]
        )  # fmt: skip
    count = int(spec.count or 0)
    nodes = spec.nodes or (count // spec.devices_per_node if spec.devices_per_node else 1)
    facts = FACTS.get(cluster, client_for)
    max_time_s, types = None, {}
    if facts is not None:
        max_time_s = _check_partition(facts, partition, nodes, count // nodes)
        present = {g.type for n in facts.nodes if partition in n.partitions for g in n.gpus}
        types = {t: m for t, m in (cluster.gpu_memory or {}).items() if t in present}
    return ClusterTarget(cluster, partition, nodes, max_time_s, types)


def _check_partition(facts: ClusterFacts, partition: str, nodes: int, per_node: int) -> int | None:
    info = facts.partitions.get(partition)
    if info is None:
        known = ", ".join(sorted(facts.partitions)) or "none"
        why = f"Slurm has no partition {partition!r} (it has {known})"
        raise InvalidInput([("partition", why)])
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
