"""/api/clusters: the Slurm clusters jobs may run on (issue 35). Admins add and remove them;
anyone lists them and reads a cluster's nodes, which answers within 2 s whatever Slurm does."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from gpudeck.api.deps import AdminUser, CurrentUser, SessionDep, SlurmClientsDep
from gpudeck.schemas.clusters import (
    ClusterCreate,
    ClusterCreated,
    ClusterPublic,
    ClusterState,
    GpuTypesPublic,
    SlurmName,
)
from gpudeck.schemas.common import ErrorResponse
from gpudeck.services.accounts import audit
from gpudeck.services.executors import cluster_reads, clusters
from gpudeck.services.submit import gpu_types

router = APIRouter(prefix="/api/clusters", tags=["clusters"])
Name = Annotated[str, Path(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$", description="the cluster")]
_ERRORS: dict[int | str, dict[str, object]] = {
    403: {"model": ErrorResponse},
    404: {"model": ErrorResponse},
    409: {"model": ErrorResponse},
}


@router.get("")
def list_clusters(_: CurrentUser, session: SessionDep) -> list[ClusterPublic]:
    return [ClusterPublic.model_validate(c) for c in clusters.list_clusters(session)]


@router.post("", status_code=201, responses=_ERRORS)
def add_cluster(
    body: ClusterCreate, admin: AdminUser, session: SessionDep, slurm: SlurmClientsDep
) -> ClusterCreated:
    """Connect a cluster. Its partitions are checked against Slurm when it answers (an unknown
    one is a 422 naming it); when it does not, the cluster is kept and the answer says why the
    partitions could not be checked."""
    cluster, check = clusters.add_cluster(session, body, admin.name, slurm)
    audit.record(
        session, admin, audit.CLUSTER_ADD, f"cluster:{cluster.name}",
        partitions=cluster.partitions, partitions_checked=check.checked,
    )  # fmt: skip
    session.commit()
    public = ClusterPublic.model_validate(cluster)
    return ClusterCreated(
        **public.model_dump(), partitions_checked=check.checked, check_note=check.note
    )


@router.get("/{name}", responses=_ERRORS)
def get_cluster(name: Name, _: CurrentUser, session: SessionDep) -> ClusterPublic:
    return ClusterPublic.model_validate(clusters.get_cluster(session, name))


@router.get("/{name}/state", responses=_ERRORS)
def cluster_state(
    name: Name, _: CurrentUser, session: SessionDep, slurm: SlurmClientsDep
) -> ClusterState:
    """The cluster's nodes, their GPUs (GRES type, count, in use) and state, as Slurm reports
    them now; `reachable: false` with the cause when Slurm does not answer within the bound,
    and since when it has not (`unreachable_since`, kept on the cluster's row)."""
    cluster = clusters.get_cluster(session, name)
    cluster_id = cluster.id
    jobs = clusters.jobs_by_node(session, cluster)
    session.close()  # no connection held while Slurm is asked
    state = cluster_reads.record_read(
        session, cluster_id, clusters.read_state(cluster, slurm, jobs=jobs)
    )
    session.commit()
    return state


@router.get("/{name}/gpu-types", responses=_ERRORS)
def cluster_gpu_types(
    name: Name,
    _: CurrentUser,
    session: SessionDep,
    slurm: SlurmClientsDep,
    partition: Annotated[
        SlurmName | None, Query(description="one of the cluster's; default: its first")
    ] = None,
    estimate_bytes: Annotated[
        int | None, Query(ge=0, le=2**50, description="the job's memory estimate per device")
    ] = None,
) -> GpuTypesPublic:
    """The partition's GRES types (memory, usable memory, count) against an estimate, and the
    type a submit of it asks Slurm for, by the submit's own rule; `refusal` says why a submit
    would be a 422 when no type fits. Answers within 2 s whatever Slurm does: when it does not
    answer, the configured types with `reachable: false` and the cause."""
    cluster = clusters.get_cluster(session, name)
    session.close()  # no connection held while Slurm is asked
    return gpu_types.gpu_types(cluster, partition, estimate_bytes, slurm)


@router.delete("/{name}", responses=_ERRORS)
def remove_cluster(name: Name, admin: AdminUser, session: SessionDep) -> ClusterPublic:
    """Disconnect a cluster; the answer is the cluster as it was."""
    removed = ClusterPublic.model_validate(clusters.remove_cluster(session, name))
    audit.record(session, admin, audit.CLUSTER_REMOVE, f"cluster:{name}")
    session.commit()
    return removed
