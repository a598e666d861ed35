"""Dependency aliases, so route signatures read like prose."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlalchemy.orm import Session

from gpudeck.api.auth import admin_principal, current_principal
from gpudeck.core.config import Settings
from gpudeck.core.security import Principal
from gpudeck.models import Job
from gpudeck.services.errors import Forbidden
from gpudeck.services.executors.clusters import SlurmClients
from gpudeck.services.jobs.lookup import get_job
from gpudeck.services.submit.checks import Submitter


async def get_session(request: Request) -> AsyncIterator[Session]:
    """A session per request. Routes that write commit explicitly (before side effects such as
    dispatching a task); anything left uncommitted is rolled back when the session closes.

    Async on purpose: creating a Session does no I/O, and closing it here hands its connection
    back to the pool as soon as the route returns. A sync generator's teardown waits for a free
    worker thread, and under load connections sat checked out in that queue until the pool ran
    dry (bench/reservation.py showed it)."""
    session: Session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        session.close()


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_slurm_clients(request: Request) -> SlurmClients:
    clients: SlurmClients = request.app.state.slurm_clients
    return clients


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SlurmClientsDep = Annotated[SlurmClients, Depends(get_slurm_clients)]
CurrentUser = Annotated[Principal, Depends(current_principal)]
AdminUser = Annotated[Principal, Depends(admin_principal)]


def get_owned_job(
    job_id: Annotated[int, Path(ge=1, le=2**63 - 1, description="job id")],
    session: SessionDep,
    user: CurrentUser,
) -> Job:
    """The job in the path, if the caller owns it or is an admin: 404 if missing, else 403."""
    job = get_job(session, job_id)
    if not user.may_manage(job.owner):
        raise Forbidden(f"job {job_id} belongs to {job.owner}", field="job_id")
    return job


# For cancel, resume and checkpoint downloads: `def cancel(job: OwnedJob, ...)`.
OwnedJob = Annotated[Job, Depends(get_owned_job)]


def submitter(request: Request, user: Principal) -> Submitter:
    """Who submits (a job, a sweep), with the operator's time limits."""
    settings = request.app.state.settings
    return Submitter(
        user.name,
        is_admin=user.is_admin,
        default_time_limit_s=settings.default_time_limit_s,
        max_time_limit_s=settings.max_time_limit_s,
        cuda_context_reserve_bytes=settings.cuda_context_reserve_bytes,
        slurm_clients=request.app.state.slurm_clients,
    )
