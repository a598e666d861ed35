"""A Slurm cluster as an admin connects it (POST /api/clusters) and as anyone reads it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

# Slurm's own alphabet for partition, account and QOS names; no space, comma or colon, so a
# name can never become a second option in an argv or a #SBATCH line.
SlurmName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
ClusterName = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$"),
    Field(description="GPUDeck's name for the cluster: lower-case letters, digits, _ and -"),
]


def _absolute(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError("must be an absolute path")
    if "\x00" in path or any(part == ".." for part in path.split("/")):
        raise ValueError("must not hold '..' or NUL")
    return path.rstrip("/") or "/"


AbsolutePath = Annotated[str, StringConstraints(max_length=4096), AfterValidator(_absolute)]


# user@host for ssh: a user name and a host name or address; neither may start with '-', so
# neither can become an ssh option (the argv also ends ssh's options with `--`).
SshHost = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}@[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$"
    ),
    Field(description="user@host of the login node GPUDeck runs Slurm's commands on"),
]

GpuMemory = Annotated[int, Field(ge=2**30, le=2**44, description="bytes")]


class ClusterCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: ClusterName
    kind: Literal["slurm"] = "slurm"
    partitions: list[SlurmName] = Field(
        min_length=1, max_length=32, description="the partitions jobs may be submitted to"
    )
    account: SlurmName | None = Field(default=None, description="sbatch --account")
    qos: SlurmName | None = Field(default=None, description="sbatch --qos")
    shared_dir: AbsolutePath = Field(
        description="a directory the compute nodes share, for the jobs' logs and checkpoints"
    )
    access: Literal["local", "ssh"] = Field(
        default="local",
        description="where Slurm's commands run: 'local' (the API's host is a submit host) or "
        "'ssh' (on a login node, as ssh_host, with ssh_key_path and known_hosts_path)",
    )
    ssh_host: SshHost | None = None
    ssh_port: int = Field(default=22, ge=1, le=65535, description="the login node's SSH port")
    ssh_key_path: AbsolutePath | None = Field(
        default=None,
        description="the private key GPUDeck signs in with, a file on the API's host readable "
        "by its owner only",
    )
    known_hosts_path: AbsolutePath | None = Field(
        default=None,
        description="a known_hosts file on the API's host holding the login node's host key "
        "(a host key it does not hold is refused)",
    )
    slurm_conf: AbsolutePath | None = Field(
        default=None,
        description="the slurm.conf the commands read (SLURM_CONF); null: the host's",
    )
    python: AbsolutePath | None = Field(
        default=None,
        description="the Python with GPUDeck installed that compute nodes start ranks with "
        "(on the shared filesystem); null: the one GPUDeck runs in, at the same path",
    )
    gpu_memory: dict[SlurmName, GpuMemory] = Field(
        default_factory=dict,
        max_length=64,
        description="each GRES type's memory in bytes (Slurm does not know it): a job whose "
        "estimate fits no type of its partition is refused, and Slurm is asked for a type "
        "that fits",
        examples=[{"h100": 85899345920}],
    )


class ClusterPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    kind: str
    partitions: list[str]
    account: str | None
    qos: str | None
    shared_dir: str
    access: str
    ssh_host: str | None = Field(default=None, description="user@host, with access 'ssh'")
    ssh_port: int | None = Field(default=None, description="with access 'ssh'")
    known_hosts_path: str | None = Field(default=None, description="with access 'ssh'")
    slurm_conf: str | None
    python: str | None
    gpu_memory: dict[str, int] = Field(default_factory=dict)
    created_by: str
    created_at: datetime


class ClusterCreated(ClusterPublic):
    partitions_checked: bool = Field(
        description="whether Slurm confirmed the partitions (false: it did not answer)"
    )
    check_note: str | None = Field(description="why they could not be checked")


class GpuGresPublic(BaseModel):
    type: str | None
    count: int
    used: int
    used_indices: list[int]


class ClusterJobRef(BaseModel):
    """A GPUDeck job running on a cluster node, as the executor's last poll read it."""

    job_id: int
    name: str
    owner: str
    slurm_job_id: str
    gpus_per_node: int


class ClusterNodePublic(BaseModel):
    name: str
    state: str
    partitions: list[str]
    cpus: int
    cpus_allocated: int
    memory_mb: int
    memory_allocated_mb: int
    gpus: list[GpuGresPublic]
    jobs: list[ClusterJobRef] = Field(
        default_factory=list,
        description="GPUDeck's jobs on this node (Slurm may run others: its GPUs in use say so)",
    )


class ClusterState(BaseModel):
    """A cluster's nodes as Slurm reports them now, or why they cannot be read."""

    name: str
    reachable: bool
    cause: str | None = Field(description="why the cluster could not be read; null when reachable")
    nodes: list[ClusterNodePublic]
    read_in_s: float
    read_at: datetime = Field(description="when this read asked Slurm")
    answered_at: datetime | None = Field(
        default=None, description="the last read Slurm answered (this one when reachable)"
    )
    unreachable_since: datetime | None = Field(
        default=None,
        description="the first read Slurm did not answer since it last answered; null when "
        "reachable",
    )


class GpuTypePublic(BaseModel):
    """One GRES type of a partition, judged against a job's estimate per device."""

    type: str | None = Field(description="the GRES type; null: GPUs the site gives no type")
    memory_bytes: int | None = Field(
        description="as the cluster configures it (gpu_memory); null: not configured"
    )
    usable_bytes: int | None = Field(
        description="what one idle GPU of it gives a job (memory less the safety margin)"
    )
    count: int | None = Field(
        description="GPUs of this type on the partition's nodes; null: Slurm did not answer"
    )
    fits: bool | None = Field(
        description="the estimate fits its usable memory; null: no estimate or memory unknown"
    )


class GpuTypesPublic(BaseModel):
    """A partition's GRES types and the one a job of `estimate_bytes` per device asks Slurm
    for: the same rule a submit applies."""

    cluster: str
    partition: str
    estimate_bytes: int | None
    reachable: bool = Field(
        description="Slurm answered; false: the types are the configured ones, counts unknown"
    )
    cause: str | None = Field(description="why Slurm could not be read; null when reachable")
    types: list[GpuTypePublic]
    gpu_type: str | None = Field(
        description="the GRES type GPUDeck asks Slurm for; null: any type (or none fits)"
    )
    refusal: str | None = Field(
        description="why a submit with this estimate is refused (422 on config): no type "
        "fits; null: it is not"
    )
