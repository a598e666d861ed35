from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from gpudeck.api.deps import CurrentUser, OwnedJob, SessionDep
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.jobs import JobCreate, JobPublic, JobsPublic, StatusFilter, job_public
from gpudeck.services import audit
from gpudeck.services import jobs as job_service
from gpudeck.services.dispatch import dispatch_job
from gpudeck.services.placement import live_memory_or_none

router = APIRouter(prefix="/api/jobs", tags=["jobs"])
JobId = Annotated[int, Path(ge=1, le=2**63 - 1, description="job id")]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={
        409: {
            "model": ErrorResponse,
            "description": "devices busy, too few free, or too little free memory (see force)",
        }
    },
)
def create_job(
    spec: JobCreate, session: SessionDep, request: Request, user: CurrentUser
) -> JobPublic:
    live = None if spec.force else live_memory_or_none(request.app.state.redis)
    job = job_service.create_job(session, spec, owner=user.name, live=live)
    audit.record(session, user, audit.JOB_SUBMIT, f"job:{job.id}", kind=job.kind)
    session.commit()
    dispatch_job(request.app.state.celery, job.id, job.node)
    return job_public(job)


@router.get("")
def list_jobs(
    session: SessionDep,
    status: Annotated[
        list[StatusFilter] | None, Query(description="repeat to match several")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> JobsPublic:
    jobs, total = job_service.list_jobs(session, statuses=status, limit=limit, offset=offset)
    return JobsPublic(items=[job_public(j) for j in jobs], total=total, limit=limit, offset=offset)


@router.get("/{job_id}", responses={404: {"model": ErrorResponse}})
def get_job(job_id: JobId, session: SessionDep) -> JobPublic:
    return job_public(job_service.get_job(session, job_id))


@router.post(
    "/{job_id}/cancel",
    responses={
        403: {"model": ErrorResponse, "description": "not the owner or an admin"},
        404: {"model": ErrorResponse},
        409: {"model": ErrorResponse},
    },
)
def cancel_job(owned: OwnedJob, session: SessionDep, user: CurrentUser) -> JobPublic:
    job = job_service.cancel_job(session, owned.id)
    audit.record(session, user, audit.JOB_CANCEL, f"job:{job.id}")
    session.commit()
    return job_public(job)
