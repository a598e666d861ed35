"""The submit pipeline, one for a job and a sweep: where the jobs may run (resolved once), each
config validated, the scheduling fields and quota for all of them at once, then per member its
checks and its job row. A job then takes the reservation step (submit/reserve.py); a sweep's
members are inserted together and wait for the scheduler (sweeps/create.py). Takes a Session,
never commits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from gpudeck.engine.kinds import get_kind
from gpudeck.models import Job, JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.jobs import state as job_state
from gpudeck.services.placement.live_memory import Readings
from gpudeck.services.queue import snapshot
from gpudeck.services.queue.plan import Quota
from gpudeck.services.submit import cluster_target, placement_request
from gpudeck.services.submit.checks import (
    Submitter,
    check_inputs,
    check_reads_own_job,
    check_scheduling,
    inputs_due,
    validate_config,
)
from gpudeck.services.submit.cluster_target import ClusterTarget
from gpudeck.services.submit.estimates import EstimateMemo, estimate_bytes_per_device
from gpudeck.services.submit.placement_request import Placement
from gpudeck.services.submit.reserve import reserve_at_submit, starts_now
from gpudeck.services.submit.sharing import reservation_bytes


@dataclass
class Submission:
    """A spec resolved once for all the jobs it makes (one for a job, each member for a
    sweep): who submits, where the jobs may run, the owner's quota, their time limit, and
    whether their inputs are checked now. What the members share is not read again per member;
    what they memoise (jobs found readable, estimates) is kept here."""

    spec: JobCreate
    who: Submitter
    placement: Placement | ClusterTarget
    quota: Quota
    time_limit_s: int
    inputs_dir: Path | None  # set when the kind's inputs are checked at submit
    readable: set[int] = field(default_factory=set)
    estimates: EstimateMemo = field(default_factory=EstimateMemo)

    def member_row(self, session: Session, config: dict[str, Any], name: str) -> dict[str, Any]:
        """One member's checks (what it reads, its inputs, what its estimate can never fit)
        and its job row; `config` is validated already."""
        spec = self.spec
        check_reads_own_job(session, spec.kind, config, self.who, self.readable)
        if self.inputs_dir is not None:
            check_inputs(spec.kind, config, self.inputs_dir)
        # Once per distinct config as the estimate reads it (an lr sweep: once).
        estimate = estimate_bytes_per_device(spec.kind, config, spec.world_size, self.estimates)
        reserved = None
        if spec.share == "memory" and isinstance(self.placement, Placement):
            reserved = reservation_bytes(
                session, spec, self.placement, estimate, self.who.cuda_context_reserve_bytes
            )
        columns = job_columns(
            spec,
            config,
            name=name,
            owner=self.who.owner,
            node=self.placement.home_node(spec, estimate),
            placement=self.placement,
            estimate=estimate,
            time_limit_s=self.time_limit_s,
        )
        return columns | {"reserved_bytes_per_device": reserved}


def where_it_runs(session: Session, spec: JobCreate, who: Submitter) -> Placement | ClusterTarget:
    """GPUDeck's own nodes (placement_request.resolve), or the Slurm cluster it names."""
    if spec.cluster is not None:
        return cluster_target.resolve(session, spec, who.slurm_clients)
    return placement_request.resolve(session, spec)


def prepare(
    session: Session,
    spec: JobCreate,
    who: Submitter,
    placement: Placement | ClusterTarget,
    data_dir: Path | None,
    *,
    jobs: int,
) -> Submission:
    """After where the jobs may run (placement_request.resolve) and each config (validated):
    the scheduling fields and the
    queued-jobs quota for all `jobs` at once, and whether inputs are checked now."""
    quota = snapshot.quota_of(session, who.owner)  # read once: every check below shares it
    time_limit = check_scheduling(session, spec, who, quota, jobs=jobs)
    if isinstance(placement, ClusterTarget):
        time_limit = placement.time_limit(spec.time_limit_s, time_limit)
    inputs_dir = data_dir if inputs_due(session, spec, data_dir) else None
    return Submission(spec, who, placement, quota, time_limit, inputs_dir)


def create_job(
    session: Session,
    spec: JobCreate,
    *,
    owner: str | Submitter,
    read_live: Callable[[], Readings | None] = lambda: None,
    data_dir: Path | None = None,
    may_start_now: bool = True,
) -> Job:
    """Insert the job and, when it may start now, reserve its devices in the caller's
    transaction; otherwise it waits for the scheduler (`queue`, the default) or, with
    `queue: false`, the submission is refused as devices busy.

    The submit pipeline, as a sweep runs it (sweeps/create.py) for one member: where it may
    run, its config, the scheduling fields, the member's checks and row
    (Submission.member_row), then the reservation step (submit/reserve.py). `read_live` reads
    the nodes' fresh free memory (None: unknown), only for a job that may start now.
    `may_start_now=False`: it waits for the scheduler whatever is free (a resumed sweep
    member: the scheduler keeps to the sweep's max_parallel)."""
    who = owner if isinstance(owner, Submitter) else Submitter(owner)
    placement = where_it_runs(session, spec, who)
    config = validate_config(spec.kind, spec.config, spec.world_size)
    prepared = prepare(session, spec, who, placement, data_dir, jobs=1)
    job = Job(**prepared.member_row(session, config, spec.name or f"{spec.kind}-job"))
    if isinstance(placement, ClusterTarget):
        # Slurm places it: it waits for the executor's next pass to submit it (sbatch).
        session.add(job)
        session.flush()
        job_state.wake_scheduler(session, arrival=True)
        return job
    starts = starts_now(session, spec, who, prepared.quota, may_start_now)
    reserve_at_submit(
        session, job, spec, placement, job.estimate_bytes_per_device, read_live, starts
    )
    return job


def job_columns(
    spec: JobCreate,
    config: dict[str, Any],
    *,
    name: str,
    owner: str,
    node: str,
    placement: Placement | ClusterTarget,
    estimate: int | None,
    time_limit_s: int,
) -> dict[str, Any]:
    """A new job's row: one job's, or each of a sweep's members (inserted together)."""
    named = placement.named
    on_cluster = placement.job_columns(estimate) if isinstance(placement, ClusterTarget) else {}
    return {
        **on_cluster,
        "name": name,
        "kind": spec.kind,
        "config": config,
        "owner": owner,
        "node": node,
        "world_size": spec.world_size,
        "status": JobStatus.queued,
        "progress_total": steps_of(spec.kind, config),
        "estimate_bytes_per_device": estimate,
        "share": spec.share,
        "priority": spec.priority,
        "time_limit_s": time_limit_s,
        "depends_on": list(spec.depends_on),
        "preemptible": spec.preemptible,
        "held": spec.hold,
        "requested_devices": [d.uuid for d in named] if named else None,
        "requested_nodes": [d.node for d in named] if len(placement.nodes) > 1 else None,
        "spread_nodes": placement.spread_nodes,
        "devices_per_node": spec.devices_per_node,
    }


def steps_of(kind_name: str, config: dict[str, Any]) -> int | None:
    kind = get_kind(kind_name)
    field = kind.steps_field if kind else None
    return int(config[field]) if field and field in config else None
