from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from gpudeck.core.db import Base
from gpudeck.models.allocation import Allocation
from gpudeck.models.cluster import Cluster


class JobStatus(enum.StrEnum):
    queued = "queued"
    starting = "starting"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"
    lost = "lost"
    timeout = "timeout"  # its time limit was reached: stopped with a final checkpoint
    stopped_early = "stopped_early"  # its sweep's early-stopping rule ended it (checkpointed)


_STATUSES = ", ".join(f"'{s.value}'" for s in JobStatus)


@dataclass(frozen=True)
class JobProgress:
    step: int
    total: int | None  # None: the kind did not say how many steps
    rate_per_s: float | None = None  # measured over the current run; None: not yet


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(f"status IN ({_STATUSES})", name="ck_jobs_status"),
        CheckConstraint("share IN ('exclusive', 'memory')", name="ck_jobs_share"),
        Index("ix_jobs_status_created", "status", "created_at"),
        Index("ix_jobs_tags", "tags", postgresql_using="gin"),
        Index(
            "ix_jobs_cluster_live",
            "cluster_id",
            postgresql_where=text(
                "cluster_id IS NOT NULL AND status IN ('queued', 'starting', 'running')"
            ),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSONB)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.queued)
    owner: Mapped[str] = mapped_column(String(128), default="local")
    node: Mapped[str] = mapped_column(String(128))
    world_size: Mapped[int] = mapped_column(Integer)
    resume_from_job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"))
    estimate_bytes_per_device: Mapped[int | None] = mapped_column(BigInteger)
    peak_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # What each rank used, when its kind measures it (script jobs: schemas.jobs.RankMemory).
    rank_memory: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    progress_step: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_total: Mapped[int | None] = mapped_column(BigInteger)
    # Steps a second over the current run, measured by the worker's relay once its progress
    # spans RATE_WINDOW_S (worker/relay.py); None before that, or for a kind that reports none.
    progress_rate: Mapped[float | None] = mapped_column(Float)
    # The newest value of every metric it reported (job_events.record_metrics keeps it): its
    # last row alone may hold only some (a stopped SAE's final report: its held-out figures).
    latest_metrics: Mapped[dict[str, float]] = mapped_column(JSONB, server_default="{}")
    error: Mapped[str | None] = mapped_column(Text)
    cancel_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Its sweep's early-stopping rule asked it to stop: the cancel then ends it stopped_early.
    early_stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The outbox: when the run task was last handed to the broker. A queued job with none (the
    # broker was down) or an old one (the message was lost) is sent again (services.queue.dispatch).
    dispatched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Scheduling (docs/scheduler.md). A queued job without live allocations waits for the
    # scheduler; `requested_devices` are the uuids an explicit request waits for (None: count).
    priority: Mapped[int] = mapped_column(Integer, server_default="0")
    time_limit_s: Mapped[int] = mapped_column(Integer, server_default="2592000")
    depends_on: Mapped[list[int]] = mapped_column(JSONB, server_default="[]")
    preemptible: Mapped[bool] = mapped_column(Boolean, server_default="false")
    held: Mapped[bool] = mapped_column(Boolean, server_default="false")
    # Set by the scheduler to stop a running preemptible job for a higher-priority one: its
    # worker stops it with a final checkpoint and it waits again
    # (services.runs.lifecycle.requeue_job).
    preempt_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    preempted_by_job_id: Mapped[int | None] = mapped_column(BigInteger)
    # None is SQL NULL, not the JSON value null (JSONB's default), so `IS NULL` finds it and a
    # reader gets nothing to parse.
    requested_devices: Mapped[list[str] | None] = mapped_column(JSONB(none_as_null=True))
    # Named devices on several nodes: the node of each of `requested_devices` (None: all are
    # on `node`). A count spread over nodes: `spread_nodes` (at most that many nodes) or
    # `devices_per_node` (exactly that many on each), as submitted; while such a job waits,
    # `node` is only where it would go on an idle cluster: the scheduler sets it at its start.
    requested_nodes: Mapped[list[str] | None] = mapped_column(JSONB(none_as_null=True))
    spread_nodes: Mapped[int | None] = mapped_column(Integer)
    # A sweep's member (models.Sweep): its place in the sweep and its parameter values, by the
    # dotted config path each sets.
    sweep_id: Mapped[int | None] = mapped_column(ForeignKey("sweeps.id"), index=True)
    sweep_index: Mapped[int | None] = mapped_column(Integer)
    sweep_params: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    devices_per_node: Mapped[int | None] = mapped_column(Integer)
    # Free text its owner writes on it (services.jobs.labels): tags to find it by ("baseline"),
    # notes to say why it ran. Searched by the jobs list; no part of its config.
    tags: Mapped[list[str]] = mapped_column(JSONB, server_default="[]")
    # Where it runs when not on GPUDeck's own nodes (docs/slurm.md): the cluster, Slurm's id
    # for it ("123", or "123_4" for a sweep member run as an array task) once submitted, and
    # Slurm's last word on it (state, pending reason, nodes, or why Slurm did not answer).
    cluster_id: Mapped[int | None] = mapped_column(ForeignKey("clusters.id", ondelete="RESTRICT"))
    slurm_job_id: Mapped[str | None] = mapped_column(String(32))
    slurm: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    notes: Mapped[str] = mapped_column(Text, server_default="")
    # How it holds its devices: whole ("exclusive"), or a reservation of bytes on each that
    # other sharing jobs may fit beside ("memory": its estimate + a CUDA context reserve).
    share: Mapped[str] = mapped_column(String(16), default="exclusive", server_default="exclusive")
    # A sharing job's reservation on each of its devices, fixed at submit (None: exclusive).
    reserved_bytes_per_device: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    allocations: Mapped[list[Allocation]] = relationship(order_by=Allocation.rank, lazy="selectin")
    cluster: Mapped[Cluster | None] = relationship(lazy="selectin")

    @property
    def cluster_name(self) -> str | None:
        return self.cluster.name if self.cluster is not None else None

    @property
    def progress(self) -> JobProgress:
        return JobProgress(self.progress_step, self.progress_total, self.progress_rate)

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_requested_at is not None


class JobMetric(Base):
    __tablename__ = "job_metrics"
    __table_args__ = (Index("ix_job_metrics_job_step", "job_id", "step"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    step: Mapped[int] = mapped_column(BigInteger)
    metrics: Mapped[dict[str, float]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    __table_args__ = (UniqueConstraint("job_id", "step", name="uq_checkpoints_job_step"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    step: Mapped[int] = mapped_column(BigInteger)
    # Relative to the data directory, so the data directory can move.
    path: Mapped[str] = mapped_column(String(1024))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    files: Mapped[list[str]] = mapped_column(JSONB)
    # Where the bytes are: the node whose rank 0 wrote it, the directory there, and each file's
    # size as that node saw it (an API on another machine cannot stat them). None in rows
    # written before migration 0013.
    node: Mapped[str | None] = mapped_column(String(255))
    node_path: Mapped[str | None] = mapped_column(String(4096))
    file_sizes: Mapped[dict[str, int] | None] = mapped_column(JSONB)
    loss: Mapped[float | None] = mapped_column(Float)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
