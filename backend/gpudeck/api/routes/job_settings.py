"""A job's settings (its config field by field, defaults marked, a sweep member's parameters
against its base) and the fields where two or more jobs differ. Included before the jobs
routes: `/api/jobs/diff` must not be read as the job `diff`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from gpudeck.api.deps import CurrentUser, SessionDep
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.settings import MAX_DIFF_JOBS, JobSettingsPublic, SettingsDiffPublic
from gpudeck.services.errors import InvalidInput
from gpudeck.services.jobs import settings

router = APIRouter(prefix="/api/jobs", tags=["jobs"])
JobId = Annotated[int, Path(ge=1, le=2**63 - 1, description="job id")]


@router.get("/diff", responses={404: {"model": ErrorResponse}})
def diff_jobs(
    session: SessionDep,
    _user: CurrentUser,
    jobs: Annotated[
        list[Annotated[int, Query(ge=1, le=2**63 - 1)]],
        Query(
            min_length=2,
            max_length=MAX_DIFF_JOBS,
            description=f"the jobs to compare, 2 to {MAX_DIFF_JOBS}: ?jobs=3&jobs=7",
        ),
    ],
) -> SettingsDiffPublic:
    """The config fields whose values differ between the jobs, one value per job in the
    order asked; fields every job sets alike are only counted."""
    repeated = sorted({j for j in jobs if jobs.count(j) > 1})
    if repeated:
        raise InvalidInput([("jobs", f"job {repeated[0]} is named twice")])
    return settings.jobs_diff(session, jobs)


@router.get("/{job_id}/settings", responses={404: {"model": ErrorResponse}})
def job_settings(job_id: JobId, session: SessionDep, _user: CurrentUser) -> JobSettingsPublic:
    """Every config field with the kind's default and whether the value is it, what the value
    comes to given the rest (e.g. a share of the run in steps), and for a sweep member the
    parameters it sets beside its sweep's base config."""
    return settings.job_settings(session, job_id)
