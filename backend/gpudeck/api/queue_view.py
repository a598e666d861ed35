"""Jobs as the API shows them, with the queue's view of each waiting one: its position, reason
and expected start, from the same pass the scheduler runs (computed on read, so what a user
sees is never older than the request)."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Request
from sqlalchemy.orm import Session

from gpudeck.api.auth import current_principal
from gpudeck.models import Job, JobStatus
from gpudeck.schemas.jobs import JobPublic, QueueInfo
from gpudeck.services.executors import slurm_runs
from gpudeck.services.placement.live_memory import live_memory_or_none
from gpudeck.services.queue import passes
from gpudeck.services.queue import summary as queue_summary


def current_infos(session: Session, request: Request) -> dict[int, QueueInfo]:
    live = live_memory_or_none(request.app.state.redis)
    half_life = request.app.state.settings.fair_share_half_life_s
    return passes.queue_infos(passes.compute_plan(session, live, half_life_s=half_life))


def public(session: Session, request: Request, jobs: Sequence[Job]) -> list[JobPublic]:
    """JobPublic for each job; the waiting ones carry their QueueInfo."""
    infos: dict[int, QueueInfo] = {}
    if any(j.status == JobStatus.queued and not j.allocations and j.cluster_id is None
           for j in jobs):  # fmt: skip
        infos = current_infos(session, request)
    viewer = current_principal(request)
    out = []
    for job in jobs:
        item = JobPublic.model_validate(job)
        item.queue = _queue_of(job, infos)
        out.append(item if viewer.may_manage(job.owner) else cause_only(item))
    return out


def _queue_of(job: Job, infos: dict[int, QueueInfo]) -> QueueInfo | None:
    if job.status != JobStatus.queued:
        return None
    if job.cluster_id is not None:
        return slurm_runs.queue_info(job)  # Slurm's queue, not GPUDeck's pass
    return infos.get(job.id)


def cause_only(item: JobPublic) -> JobPublic:
    """A job as another user sees it: why it ended in one line, not the error's log tail,
    which holds whatever its ranks printed (a secret included); that is the owner's and the
    admins', as the logs are."""
    if item.error is None:
        return item
    return item.model_copy(update={"error": item.error_summary})


def one(session: Session, request: Request, job: Job) -> JobPublic:
    return public(session, request, [job])[0]


def on_submit(session: Session, request: Request, job: Job) -> JobPublic:
    """The submit answer: a waiting job's place from the scheduler's last pass (one Redis
    read, services.queue.summary); a full pass only when no scheduler left a fresh one."""
    item = JobPublic.model_validate(job)
    if job.status != JobStatus.queued or job.allocations:
        return item
    if job.cluster_id is not None:
        item.queue = slurm_runs.queue_info(job)
        return item
    summary = queue_summary.read(request.app.state.redis)
    if summary is not None:
        held = queue_summary.held_now(session, list(summary.free_at))
        since = queue_summary.submitted_since(session, summary, job)
        item.queue = queue_summary.place_of(summary, job, held, since)
    else:
        item.queue = current_infos(session, request).get(job.id)
    return item
