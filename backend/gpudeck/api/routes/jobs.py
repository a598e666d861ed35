from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status
from pydantic import Field

from gpudeck.api import queue_view
from gpudeck.api.deps import CurrentUser, OwnedJob, SessionDep, submitter
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.jobs import (
    JobCreate,
    JobLabels,
    JobPublic,
    JobsPublic,
    StatusFilter,
    Tag,
)
from gpudeck.services.accounts import audit
from gpudeck.services.jobs import cancel as jobs_cancel
from gpudeck.services.jobs import labels, lookup
from gpudeck.services.placement.live_memory import live_memory_or_none
from gpudeck.services.queue.dispatch import dispatch_to_nodes, mark_dispatched
from gpudeck.services.submit import checks, submission

router = APIRouter(prefix="/api/jobs", tags=["jobs"])
JobId = Annotated[int, Path(ge=1, le=2**63 - 1, description="job id")]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={
        403: {"model": ErrorResponse, "description": "the kind needs run_code (script)"},
        409: {
            "model": ErrorResponse,
            "description": (
                "with queue: false, devices busy; or devices that can never hold the job, "
                "or too little free memory (see force); or the queued-jobs quota"
            ),
        },
    },
)
def create_job(
    spec: JobCreate, session: SessionDep, request: Request, user: CurrentUser
) -> JobPublic:
    """Devices free and nobody waiting ahead: the job starts now. Otherwise it waits in the
    queue, or with `queue: false` the answer is 409. A waiting job's `queue` in the answer
    is its place as of the scheduler's last pass (no pass runs here, so 200 clients submit at
    once); GET /api/jobs/{id} or GET /api/queue show it from a pass of their own."""
    checks.check_may_submit(spec.kind, user)
    settings = request.app.state.settings
    job = submission.create_job(
        session,
        spec,
        owner=submitter(request, user),
        read_live=lambda: live_memory_or_none(request.app.state.redis),
        data_dir=settings.data_dir,
    )
    audit.record(session, user, audit.JOB_SUBMIT, f"job:{job.id}", kind=job.kind)
    session.commit()
    state = request.app.state
    if job.allocations and dispatch_to_nodes(state.celery, job, state.redis_breaker):
        mark_dispatched(session, job.id)
        session.commit()
    return queue_view.on_submit(session, request, job)


@router.get("")
def list_jobs(
    session: SessionDep,
    request: Request,
    status: Annotated[
        list[StatusFilter] | None, Query(description="repeat to match several")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    tag: Annotated[
        list[Tag] | None,
        Query(description="only jobs carrying this tag; repeat: every one of them"),
    ] = None,
    q: Annotated[
        str, Query(max_length=200, description="in the name, kind, tags or notes (any case)")
    ] = "",
    job_id: Annotated[
        list[Annotated[int, Field(ge=1, le=2**63 - 1)]] | None,
        Query(alias="id", max_length=100, description="only these jobs (a comparison's)"),
    ] = None,
) -> JobsPublic:
    jobs, total = lookup.list_jobs(
        session,
        statuses=status,
        limit=limit,
        offset=offset,
        tags=tag or (),
        search=q,
        ids=job_id or (),
    )
    items = queue_view.public(session, request, jobs)
    return JobsPublic(items=items, total=total, limit=limit, offset=offset)


@router.get("/{job_id}", responses={404: {"model": ErrorResponse}})
def get_job(job_id: JobId, session: SessionDep, request: Request) -> JobPublic:
    return queue_view.one(session, request, lookup.get_job(session, job_id))


@router.post(
    "/{job_id}/cancel",
    responses={
        403: {"model": ErrorResponse, "description": "not the owner or an admin"},
        404: {"model": ErrorResponse},
        409: {"model": ErrorResponse},
    },
)
def cancel_job(owned: OwnedJob, session: SessionDep, user: CurrentUser) -> JobPublic:
    job = jobs_cancel.cancel_job(session, owned.id)
    audit.record(session, user, audit.JOB_CANCEL, f"job:{job.id}")
    session.commit()
    return JobPublic.model_validate(job)


@router.patch(
    "/{job_id}/labels",
    responses={
        403: {"model": ErrorResponse, "description": "not the owner or an admin"},
        404: {"model": ErrorResponse},
    },
)
def label_job(body: JobLabels, owned: OwnedJob, session: SessionDep, request: Request) -> JobPublic:
    """Change a job's tags and notes (its owner or an admin), in any state: `tags` replaces
    them, `add_tags` and `remove_tags` change them in place, `notes` replaces the notes."""
    job = labels.relabel(
        session,
        owned,
        tags=body.tags,
        add_tags=body.add_tags,
        remove_tags=body.remove_tags,
        notes=body.notes,
    )
    session.commit()
    return queue_view.one(session, request, job)
