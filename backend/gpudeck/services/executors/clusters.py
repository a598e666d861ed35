"""The clusters an admin connected: add (partitions checked against the cluster when it
answers), list, remove, and a cluster's nodes read within a bound. Takes a Session, never
commits; Slurm is reached only through the adapter (gpudeck.slurm)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gpudeck.models import Cluster, Job
from gpudeck.schemas.clusters import (
    ClusterCreate,
    ClusterJobRef,
    ClusterNodePublic,
    ClusterState,
    GpuGresPublic,
)
from gpudeck.services.errors import Conflict, InvalidInput, NotFound
from gpudeck.slurm import CommandRunner, LocalRunner, NodeInfo, SlurmClient, SlurmError
from gpudeck.slurm.client import unanswered
from gpudeck.slurm.records import expand_hostlist
from gpudeck.slurm.ssh import HostKeyRejected, KeyRefused, SshRunner

# The API answers within 2 s whatever the cluster does: one Slurm command, killed past this.
# 1.5 s left too little for the request around it on a loaded machine (2.18 s answered with
# slurmctld stopped, three test processes on two cores); a healthy scontrol answers in ~0.1 s.
READ_TIMEOUT_S = 1.0

ClientFor = Callable[[Cluster, float], SlurmClient]


class ClusterNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"no cluster {name!r}", field="name", code="cluster_not_found")


class ClusterExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"a cluster named {name!r} exists", field="name", code="cluster_exists")


@dataclass(frozen=True)
class PartitionCheck:
    checked: bool
    note: str | None = None  # why not, when the cluster did not answer


@dataclass(frozen=True)
class SlurmClients:
    """Each cluster's adapter: its commands run here ('local') or on its login node ('ssh'),
    with its slurm.conf. Built once where a part of GPUDeck starts (the API's lifespan, the
    scheduler's duties), from that part's data directory: `ssh_control_dir` is where ssh keeps
    one connection per login node open (None: a connection per command)."""

    ssh_control_dir: Path | None = None

    @classmethod
    def under(cls, data_dir: Path) -> SlurmClients:
        """Clients keeping ssh's connections under `<data_dir>/ssh` (this user's only), made
        now; a connection per command when it cannot be made."""
        path = data_dir / "ssh"
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return cls()
        return cls(path)

    def __call__(self, cluster: Cluster, timeout_s: float = READ_TIMEOUT_S) -> SlurmClient:
        return SlurmClient(self.command_runner(cluster), timeout_s=timeout_s)

    def command_runner(self, cluster: Cluster) -> CommandRunner:
        if cluster.access == "ssh":
            assert cluster.ssh_host and cluster.ssh_key_path and cluster.known_hosts_path
            return SshRunner(
                cluster.ssh_host, Path(cluster.ssh_key_path), Path(cluster.known_hosts_path),
                port=cluster.ssh_port or 22, slurm_conf=cluster.slurm_conf,
                control_dir=self.ssh_control_dir,
            )  # fmt: skip
        env = (
            None if cluster.slurm_conf is None else {**os.environ, "SLURM_CONF": cluster.slurm_conf}
        )
        return LocalRunner(env)


# For callers that start no part of GPUDeck (tests, scripts): a connection per ssh command.
slurm_client = SlurmClients()


def list_clusters(session: Session) -> list[Cluster]:
    return list(session.scalars(select(Cluster).order_by(Cluster.name)))


def get_cluster(session: Session, name: str) -> Cluster:
    cluster = session.scalar(select(Cluster).where(Cluster.name == name))
    if cluster is None:
        raise ClusterNotFound(name)
    return cluster


def add_cluster(
    session: Session, body: ClusterCreate, created_by: str, client_for: ClientFor = slurm_client
) -> tuple[Cluster, PartitionCheck]:
    """Insert the cluster once its partitions are known to Slurm, or Slurm could not be asked
    (the check's note says so); an unknown partition is refused naming it, and nothing is kept."""
    if session.scalar(select(Cluster.id).where(Cluster.name == body.name)) is not None:
        raise ClusterExists(body.name)
    if body.slurm_conf is not None and body.access == "local" and not _is_file(body.slurm_conf):
        raise InvalidInput([("slurm_conf", f"no file {body.slurm_conf} on the API's host")])
    cluster = Cluster(**{**body.model_dump(), **_ssh_fields(body)}, created_by=created_by)
    check = check_partitions(client_for(cluster, READ_TIMEOUT_S), body.partitions)
    try:
        with session.begin_nested():
            session.add(cluster)
            session.flush()
    except IntegrityError:
        raise ClusterExists(body.name) from None  # added by someone else meanwhile
    return cluster, check


def _ssh_fields(body: ClusterCreate) -> dict[str, object]:
    """The ssh columns: all of them with access 'ssh' (paths resolved and checked), none with
    'local'. Refusals name the field."""
    fields = ("ssh_host", "ssh_key_path", "known_hosts_path")
    if body.access == "local":
        if given := [f for f in fields if getattr(body, f) is not None]:
            raise InvalidInput([(f, "only with access 'ssh'") for f in given])
        return {"ssh_port": None}
    if missing := [f for f in fields if getattr(body, f) is None]:
        raise InvalidInput([(f, "required with access 'ssh'") for f in missing])
    assert body.ssh_key_path is not None and body.known_hosts_path is not None
    return {
        "ssh_key_path": _checked_file("ssh_key_path", body.ssh_key_path, private=True),
        "known_hosts_path": _checked_file("known_hosts_path", body.known_hosts_path),
    }


def _checked_file(field: str, path: str, private: bool = False) -> str:
    """`path` resolved, once it is a regular file this process may read (and, for a private
    key, that neither its group nor others may read: ssh would refuse it anyway)."""
    try:
        resolved = Path(path).resolve(strict=True)
        mode = resolved.stat().st_mode
    except (OSError, RuntimeError):
        raise InvalidInput([(field, f"no file {path} on the API's host")]) from None
    if not stat.S_ISREG(mode):
        raise InvalidInput([(field, f"{path} is not a regular file")])
    if private and mode & 0o077:
        raise InvalidInput([(field, f"{path} is readable by its group or others (mode "
                                    f"{stat.S_IMODE(mode):04o}); chmod 600 it")])  # fmt: skip
    if not os.access(resolved, os.R_OK):
        raise InvalidInput([(field, f"{path} is not readable by GPUDeck's user")])
    return str(resolved)


def check_partitions(client: SlurmClient, wanted: list[str]) -> PartitionCheck:
    try:
        known = {p.name for p in client.partitions()}
    except SlurmError as exc:
        # A wrong host key or a refused key is the admin's to fix, not an outage to wait out.
        if isinstance(exc.__cause__, HostKeyRejected):
            raise InvalidInput([("known_hosts_path", str(exc))]) from None
        if isinstance(exc.__cause__, KeyRefused):
            raise InvalidInput([("ssh_key_path", str(exc))]) from None
        return PartitionCheck(False, unanswered(exc, "the cluster"))
    errors = [
        (f"partitions.{k}", f"no partition {name!r} on the cluster; it has {_names(known)}")
        for k, name in enumerate(wanted)
        if name not in known
    ]
    if errors:
        raise InvalidInput(errors)
    return PartitionCheck(True)


class ClusterInUse(Conflict):
    def __init__(self, name: str, jobs: int, live: int) -> None:
        still = f", {live} of them not ended" if live else ""
        super().__init__(
            f"cluster {name!r} has {jobs} jobs{still}: their records name it (delete the jobs "
            "first)",
            field="name",
            code="cluster_in_use",
        )


def remove_cluster(session: Session, name: str) -> Cluster:
    """Delete the cluster; the row as it was. A cluster jobs ran on is refused (409): their
    records, logs and checkpoints name it."""
    cluster = get_cluster(session, name)
    counts = session.execute(
        select(
            func.count(),
            func.count().filter(Job.status.in_(("queued", "starting", "running"))),
        ).where(Job.cluster_id == cluster.id)
    ).one()
    if counts[0]:
        raise ClusterInUse(name, counts[0], counts[1])
    session.delete(cluster)
    session.flush()
    return cluster


def jobs_by_node(session: Session, cluster: Cluster) -> dict[str, list[ClusterJobRef]]:
    """GPUDeck's running jobs on the cluster by node, from the executor's last poll (Slurm's
    node list of each, expanded)."""
    rows = session.execute(
        select(Job.id, Job.name, Job.owner, Job.slurm_job_id, Job.world_size, Job.slurm).where(
            Job.cluster_id == cluster.id, Job.status == "running"
        )
    ).all()
    out: dict[str, list[ClusterJobRef]] = {}
    for job_id, name, owner, slurm_id, world, view in rows:
        nodes = expand_hostlist((view or {}).get("nodes") or "")
        for node in nodes:
            out.setdefault(node, []).append(
                ClusterJobRef(job_id=job_id, name=name, owner=owner, slurm_job_id=slurm_id or "",
                              gpus_per_node=world // len(nodes))
            )  # fmt: skip
    return out


def read_state(
    cluster: Cluster,
    client_for: ClientFor = slurm_client,
    jobs: dict[str, list[ClusterJobRef]] | None = None,
) -> ClusterState:
    """The cluster's nodes and their GPUs now, with GPUDeck's `jobs` on each; never raises
    for Slurm's sake: a cluster that does not answer within READ_TIMEOUT_S reads unreachable,
    with the cause."""
    read_at = datetime.now(UTC)
    started = time.monotonic()
    try:
        nodes = client_for(cluster, READ_TIMEOUT_S).nodes()
    except SlurmError as exc:
        return ClusterState(
            name=cluster.name, reachable=False, cause=str(exc), nodes=[],
            read_in_s=round(time.monotonic() - started, 3), read_at=read_at,
        )  # fmt: skip
    return ClusterState(
        name=cluster.name, reachable=True, cause=None,
        nodes=[_node(n, (jobs or {}).get(n.name, [])) for n in nodes],
        read_in_s=round(time.monotonic() - started, 3), read_at=read_at,
    )  # fmt: skip


def _node(node: NodeInfo, jobs: list[ClusterJobRef]) -> ClusterNodePublic:
    return ClusterNodePublic(
        name=node.name,
        state=node.state,
        partitions=list(node.partitions),
        cpus=node.cpus,
        cpus_allocated=node.cpus_allocated,
        memory_mb=node.memory_mb,
        memory_allocated_mb=node.memory_allocated_mb,
        gpus=[
            GpuGresPublic(
                type=g.type, count=g.count, used=g.used, used_indices=list(g.used_indices)
            )
            for g in node.gpus
        ],
        jobs=jobs,
    )


def _is_file(path: str) -> bool:
    try:
        return Path(path).is_file()
    except OSError:  # a name too long, a directory we may not read
        return False


def _names(names: set[str]) -> str:
    return ", ".join(sorted(names)) if names else "none"
