"""The launch contract: what the worker hands the launcher for one job on one node, and each
rank's view of it. One definition, torch-free, serialised once (`to_json`/`from_json`): the
launcher hands it to each rank as that text and writes it as `<run_dir>/contract.json`, the file
a process started by another launcher (torchrun) can read.

Multi-node is in the shape already: `node_rank`, `nnodes`, `rank_offset` (the global rank of this
node's first rank) and `world_size` (all nodes); on one node they default to 0, 1, 0 and the
node's device count.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal

DeviceType = Literal["cpu", "cuda"]
CONTRACT_FILE = "contract.json"


# Expandable segments: the caching allocator grows one mapping instead of keeping blocks of
# every size it ever cut, so what the process reserves follows what it allocates. Without it
# a training step on an H200 reserved 17-20 % beyond its allocated peak (docs/benchmarks-gpu.md),
# memory no estimate could promise to another job.
CUDA_ALLOC_CONF = "expandable_segments:True"


@dataclass(frozen=True)
class EventsTarget:
    """Where a job's ranks publish events: a Redis stream, or without one the run dir's
    events.jsonl (`per_rank_file`: events.<rank>.jsonl, one writer each, for a run dir on a
    shared filesystem where appends from several hosts are not atomic, e.g. NFS)."""

    redis_url: str | None = None
    stream: str = ""
    per_rank_file: bool = False


@dataclass(frozen=True)
class JobLaunch:
    job_id: int
    kind: str
    config: dict[str, Any]
    run_dir: str
    data_dir: str
    checkpoint_dir: str
    device_type: DeviceType
    # Per local rank: the device's index (NVML = CUDA with PCI_BUS_ID order); simulated: theirs.
    device_indices: tuple[int, ...]
    resume_from: str | None = None
    events: EventsTarget = field(default_factory=EventsTarget)
    keep_checkpoints: int = 3
    master_addr: str = "127.0.0.1"
    master_port: int = 0  # 0: the launcher picks a free one
    num_threads: int | None = None  # None: the launcher splits the node's cores
    node_rank: int = 0
    nnodes: int = 1
    rank_offset: int = 0
    total_world_size: int | None = None  # None: this node's ranks are the whole job
    # Across nodes: the interface gloo and NCCL bind to (the one the other nodes reach).
    socket_ifname: str | None = None
    # Sharing a device by memory (docs/sharing.md): the job's reservation on each device and the
    # part of it set aside for each rank's CUDA context; None: the job holds whole devices. A
    # CUDA rank caps its allocator to the reservation less the context (engine/memory_cap.py).
    reserved_bytes_per_device: int | None = None
    context_reserve_bytes: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_indices", tuple(self.device_indices))

    @property
    def local_world_size(self) -> int:
        return len(self.device_indices)

    @property
    def world_size(self) -> int:
        return self.total_world_size or self.local_world_size

    @property
    def run_id(self) -> str:
        return f"gpudeck-{self.job_id}"

    def replace(self, **changes: Any) -> JobLaunch:
        return dataclasses.replace(self, **changes)

    def rank(self, local_rank: int) -> RankPlace:
        return RankPlace(self, local_rank)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> JobLaunch:
        values = json.loads(text)
        values["events"] = EventsTarget(**values.get("events", {}))
        return cls(**values)


@dataclass(frozen=True)
class RankPlace:
    """One rank of the launch: its place in the job and torchrun's environment for it."""

    launch: JobLaunch
    local_rank: int

    @property
    def rank(self) -> int:
        return self.launch.rank_offset + self.local_rank

    @property
    def world_size(self) -> int:
        return self.launch.world_size

    @property
    def device_index(self) -> int:
        return self.launch.device_indices[self.local_rank]

    def environment(self) -> dict[str, str]:
        """torchrun's variables for this rank, plus the one device it may see (and, on CUDA,
        the allocator setting the memory estimate assumes)."""
        launch = self.launch
        env = {
            "RANK": str(self.rank),
            "LOCAL_RANK": str(self.local_rank),
            "GROUP_RANK": str(launch.node_rank),
            "ROLE_RANK": str(self.rank),
            "ROLE_NAME": "default",
            "WORLD_SIZE": str(launch.world_size),
            "LOCAL_WORLD_SIZE": str(launch.local_world_size),
            "ROLE_WORLD_SIZE": str(launch.world_size),
            "GROUP_WORLD_SIZE": str(launch.nnodes),
            "MASTER_ADDR": launch.master_addr,
            "MASTER_PORT": str(launch.master_port),
            "TORCHELASTIC_RUN_ID": launch.run_id,
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0",
            "OMP_NUM_THREADS": str(launch.num_threads or 1),
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            # Simulated devices run on CPU: such a rank must not see any GPU at all.
            "CUDA_VISIBLE_DEVICES": str(self.device_index) if launch.device_type == "cuda" else "",
        }
        if launch.device_type == "cuda":
            env["PYTORCH_CUDA_ALLOC_CONF"] = CUDA_ALLOC_CONF
        if launch.socket_ifname:
            env["GLOO_SOCKET_IFNAME"] = env["NCCL_SOCKET_IFNAME"] = launch.socket_ifname
        return env
