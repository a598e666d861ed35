"""The batch scripts the Slurm executor submits, from a job's row: its launch contract written
to the cluster's shared directory (the file its ranks read, engine/srun.py), and the typed
BatchSpec the adapter renders (slurm/script.py). One job is one Slurm job; a sweep's members
are the tasks of arrays, each task with its own directory (task-<index>) and contract."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gpudeck.core.config import Settings
from gpudeck.engine.contract import CONTRACT_FILE, EventsTarget, JobLaunch
from gpudeck.models import Cluster, Job, Sweep
from gpudeck.slurm import ArraySpec, BatchSpec
from gpudeck.worker.runner import job_paths

STOP_MARKER = "stop-signal"  # the batch shell made it: USR1 came (the time limit, or a cancel)


@dataclass(frozen=True)
class ClusterRef:
    """What a pass needs of a cluster row, read once (no ORM object crosses threads)."""

    id: int
    name: str
    partitions: tuple[str, ...]
    account: str | None
    qos: str | None
    shared_dir: Path
    python: str
    row: Cluster

    @classmethod
    def of(cls, cluster: Cluster) -> ClusterRef:
        return cls(
            id=cluster.id,
            name=cluster.name,
            partitions=tuple(cluster.partitions),
            account=cluster.account,
            qos=cluster.qos,
            shared_dir=Path(cluster.shared_dir),
            python=cluster.python or sys.executable,
            row=cluster,
        )


@dataclass(frozen=True)
class BatchScripts:
    settings: Settings
    cluster: ClusterRef

    def batch_spec(self, job: Job) -> BatchSpec:
        run_dir, _ = job_paths(self.cluster.shared_dir, job.id)
        contract = self.write_contract(job, run_dir)
        return self._spec(job, run_dir, argv_path=contract)

    def array_spec(
        self, sweep: Sweep, members: list[Job], offset: int, after: str | None
    ) -> tuple[BatchSpec, list[Path]]:
        """One array of a sweep's members (task k is members[k]); their task directories."""
        array_dir = self.cluster.shared_dir / "arrays" / f"sweep-{sweep.id}-{members[0].id}"
        task_dirs = [array_dir / f"task-{k}" for k in range(len(members))]
        for job, task_dir in zip(members, task_dirs, strict=True):
            self.write_contract(job, task_dir)
        spec = self._spec(
            members[0], array_dir, argv_path=array_dir, label=f"sweep-{sweep.id}",
            array=ArraySpec(count=len(members), max_parallel=sweep.max_parallel or len(members),
                            offset=offset, after=after),
        )  # fmt: skip
        return spec, task_dirs

    def write_contract(self, job: Job, run_dir: Path) -> Path:
        """The job's launch contract where its ranks read it."""
        run_dir.mkdir(parents=True, exist_ok=True)
        launch = JobLaunch(
            job_id=job.id,
            kind=job.kind,
            config=job.config,
            run_dir=str(run_dir),
            data_dir=str(self.cluster.shared_dir),
            checkpoint_dir=str(job_paths(self.cluster.shared_dir, job.id)[1]),
            device_type="cuda",  # each rank falls back to CPU where CUDA sees no device
            device_indices=(),
            events=EventsTarget(per_rank_file=True),
            keep_checkpoints=self.settings.keep_checkpoints,
        )
        contract = run_dir / CONTRACT_FILE
        contract.write_text(launch.to_json())
        return contract

    def _spec(
        self,
        job: Job,
        run_dir: Path,
        *,
        argv_path: Path,
        label: str | None = None,
        array: ArraySpec | None = None,
    ) -> BatchSpec:
        view = job.slurm or {}
        nodes = int(view.get("nodes_requested") or 1)
        per_node = job.world_size // nodes
        return BatchSpec(
            gpudeck_job_id=job.id,
            label=label,
            argv=(self.cluster.python, "-m", "gpudeck.engine.srun", str(argv_path)),
            output_dir=PurePosixPath(run_dir),
            rank_logs=PurePosixPath(run_dir),
            partition=view.get("partition") or self.cluster.partitions[0],
            account=self.cluster.account,
            qos=self.cluster.qos,
            nodes=nodes,
            ntasks_per_node=per_node,
            gpus_per_node=per_node,
            gpu_type=view.get("gpu_type"),
            time_limit_s=job.time_limit_s,
            # The warning before the limit, for a final checkpoint: 2 minutes, less for a
            # short limit (Slurm checks limits every 30 s, so it may come 30 s late).
            signal_before_s=min(120, max(1, job.time_limit_s // 4)),
            signal_marker=PurePosixPath(run_dir / STOP_MARKER),
            env={"PYTHONUNBUFFERED": "1", "GPUDECK_OWNER": job.owner},
            array=array,
        )
