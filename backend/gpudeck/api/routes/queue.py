"""The queue: waiting jobs in scheduling order; hold, release and re-prioritise a job; and
per-user quotas (admins)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from gpudeck.api import queue_view
from gpudeck.api.deps import AdminUser, CurrentUser, OwnedJob, SessionDep
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.jobs import JobPatch, JobPublic, QueuePublic
from gpudeck.schemas.quotas import QuotaPublic, QuotaUpdate
from gpudeck.schemas.users import USER_NAME_PATTERN
from gpudeck.services.accounts import audit
from gpudeck.services.accounts import users as user_service
from gpudeck.services.queue import actions as queue_actions
from gpudeck.services.queue import waiting as queue_waiting

router = APIRouter(prefix="/api", tags=["queue"])
_ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorResponse, "description": "not the owner or an admin"},
    404: {"model": ErrorResponse},
    409: {"model": ErrorResponse, "description": "the job is not queued"},
}
UserName = Annotated[str, Path(min_length=1, max_length=64, pattern=USER_NAME_PATTERN)]


@router.get("/queue")
def get_queue(
    session: SessionDep,
    request: Request,
    owner: Annotated[
        str | None, Query(min_length=1, max_length=64, pattern=USER_NAME_PATTERN)
    ] = None,
) -> QueuePublic:
    """Waiting jobs in scheduling order (position 1 starts next), each with its reason."""
    infos = queue_view.current_infos(session, request)
    jobs = queue_waiting.ordered_waiting(session, infos, owner)
    items = [JobPublic.model_validate(j) for j in jobs]
    for item in items:
        item.queue = infos.get(item.id)
    return QueuePublic(items=items, total=len(items))


@router.post("/jobs/{job_id}/hold", responses=_ERRORS)
def hold_job(
    owned: OwnedJob, session: SessionDep, request: Request, user: CurrentUser
) -> JobPublic:
    job = queue_actions.set_held(session, owned.id, True)
    audit.record(session, user, audit.JOB_HOLD, f"job:{job.id}")
    session.commit()
    return queue_view.one(session, request, job)


@router.post("/jobs/{job_id}/release", responses=_ERRORS)
def release_job(
    owned: OwnedJob, session: SessionDep, request: Request, user: CurrentUser
) -> JobPublic:
    job = queue_actions.set_held(session, owned.id, False)
    audit.record(session, user, audit.JOB_RELEASE, f"job:{job.id}")
    session.commit()
    return queue_view.one(session, request, job)


@router.patch("/jobs/{job_id}", responses=_ERRORS)
def patch_job(
    body: JobPatch, owned: OwnedJob, session: SessionDep, request: Request, user: CurrentUser
) -> JobPublic:
    """Change a job's priority: its owner may lower it, an admin may set any."""
    job = queue_actions.set_priority(session, owned.id, body.priority, is_admin=user.is_admin)
    audit.record(session, user, audit.JOB_PRIORITY, f"job:{job.id}", priority=body.priority)
    session.commit()
    return queue_view.one(session, request, job)


@router.get("/users/{name}/quota", responses={404: {"model": ErrorResponse}})
def get_quota(name: UserName, _: AdminUser, session: SessionDep) -> QuotaPublic:
    user_service.get_user(session, name)
    return QuotaPublic.model_validate(queue_actions.get_quota(session, name))


@router.put("/users/{name}/quota", responses={404: {"model": ErrorResponse}})
def put_quota(
    name: UserName, body: QuotaUpdate, admin: AdminUser, session: SessionDep
) -> QuotaPublic:
    user_service.get_user(session, name)
    quota = queue_actions.set_quota(session, name, body)
    audit.record(
        session,
        admin,
        audit.QUOTA_SET,
        f"user:{name}",
        max_devices=body.max_devices,
        max_queued_jobs=body.max_queued_jobs,
    )
    session.commit()
    return QuotaPublic.model_validate(quota)
