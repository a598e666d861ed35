from __future__ import annotations

from typing import Annotated

import anyio
import anyio.to_thread
from fastapi import APIRouter, Path, Request, Response
from sqlalchemy import Engine, text

from gpudeck import __version__
from gpudeck.engine.kinds import JobKind, RefusedKind, get_kind, refused_kinds, registry
from gpudeck.schemas.jobs import ChartPublic, JobKindPublic, SeriesPublic
from gpudeck.services.errors import UnknownKind

router = APIRouter(prefix="/api", tags=["meta"])


# The health check's own threads: it never waits in line behind the request threads, all of
# which a burst of submits can hold for a moment (a stalled Redis: up to its bound each).
HEALTH_THREADS = 2
_health_limiter: anyio.CapacityLimiter | None = None


@router.get("/health")
async def health(request: Request, response: Response) -> dict[str, str]:
    global _health_limiter
    node = request.app.state.settings.node_name
    if not request.app.state.warm.is_set():
        # A `gpudeck api` process is ready once warm (api/warm_up.py): the first submit after
        # health answers must not wait seconds for torch's import and the first trace.
        response.status_code = 503
        response.headers["Retry-After"] = "1"
        return {"status": "warming", "version": __version__, "node": node}
    if _health_limiter is None:
        _health_limiter = anyio.CapacityLimiter(HEALTH_THREADS)
    await anyio.to_thread.run_sync(_select_one, request.app.state.engine, limiter=_health_limiter)
    return {"status": "ok", "version": __version__, "node": node}


def _select_one(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


@router.get("/kinds")
def list_kinds() -> list[JobKindPublic]:
    """Registered job kinds with their config's JSON schema, defaults and charts; then the
    kinds the server refused (their kind API version), unavailable, each with its reason."""
    offered = [kind_public(kind) for kind in registry().values()]
    return offered + [refused_public(refused) for refused in refused_kinds().values()]


@router.get("/kinds/{kind_name}")
def read_kind(
    kind_name: Annotated[str, Path(min_length=1, max_length=64, description="a kind's name")],
) -> JobKindPublic:
    kind = get_kind(kind_name)
    if kind is not None:
        return kind_public(kind)
    refused = refused_kinds().get(kind_name)
    if refused is None:
        raise UnknownKind(kind_name, sorted(registry()))
    return refused_public(refused)  # its old jobs' pages still chart their metrics


def refused_public(refused: RefusedKind) -> JobKindPublic:
    shown = kind_public(refused.kind)
    return shown.model_copy(update={"available": False, "unavailable_reason": refused.reason})


def kind_public(kind: JobKind) -> JobKindPublic:
    return JobKindPublic(
        api_version=kind.api_version,
        available=True,
        unavailable_reason=None,
        name=kind.name,
        description=kind.description,
        config_schema=kind.config_model.model_json_schema(),
        # model_construct: the fields that have defaults; required ones (a model path) are
        # left for the user, so a kind with required fields is listed too.
        defaults=kind.config_model.model_construct().model_dump(mode="json"),
        batch_size_field=kind.batch_size_field,
        steps_field=kind.steps_field,
        estimates_memory=kind.estimate_memory is not None,
        searches_batch_size=kind.max_batch is not None,
        runs_user_code=kind.runs_user_code,
        resumes_from=kind.resumes_from,
        offers_follow_up=kind.follow_up is not None,
        charts=[ChartPublic.model_validate(chart) for chart in kind.charts],
        summary_metrics=[SeriesPublic.model_validate(s) for s in kind.summary_metrics],
        reads_job_field=kind.reads_job_field,
    )
