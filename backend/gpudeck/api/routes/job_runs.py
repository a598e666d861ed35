"""A job's run: metrics, rank logs, checkpoints (with downloads) and resume."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, status
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, PlainTextResponse, StreamingResponse
from sqlalchemy.exc import DBAPIError

from gpudeck.api.deps import CurrentUser, OwnedJob, SessionDep, SettingsDep
from gpudeck.models import Job, JobStatus
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.job_runs import (
    CheckpointFields,
    CheckpointFilePublic,
    CheckpointPublic,
    JobResume,
    JobSegmentPublic,
    MetricPoint,
    MetricsPublic,
)
from gpudeck.schemas.jobs import JobPublic
from gpudeck.schemas.map_ranks import FollowUpPublic, MapProgressPublic
from gpudeck.services.accounts import audit
from gpudeck.services.errors import InvalidInput
from gpudeck.services.jobs import checkpoints, map_ranks, rank_logs
from gpudeck.services.jobs import events as job_events
from gpudeck.services.jobs import state as job_state
from gpudeck.services.jobs.lookup import get_job
from gpudeck.services.queue.dispatch import dispatch_job, mark_dispatched
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.submit import checks, follow_up
from gpudeck.services.submit import resume as resume_service

router = APIRouter(prefix="/api/jobs", tags=["job runs"])
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorResponse}}
FOLLOW_POLL_S = 0.5
FINAL_WAIT_S = 10.0  # after a job's end, how long a follow waits for a node's last log lines
MAX_TAIL_LINES = 100_000


@router.get("/{job_id}/metrics", responses=NOT_FOUND)
def get_metrics(
    job: OwnedJob,
    session: SessionDep,
    after_step: Annotated[
        int | None, Query(ge=0, le=2**63 - 1, description="only newer points")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
) -> MetricsPublic:
    rows = job_events.list_metrics(session, job.id, after_step=after_step, limit=limit)
    items = [MetricPoint(step=r.step, metrics=r.metrics, created_at=r.created_at) for r in rows]
    return MetricsPublic(items=items, last_step=items[-1].step if items else after_step)


@router.get("/{job_id}/map-progress", responses=NOT_FOUND)
def get_map_progress(job: OwnedJob, request: Request) -> MapProgressPublic:
    """Each rank's chunks done of its share, items done and items/s (a map job; other jobs
    answer with no ranks). Read from the job's event stream, kept 7 days after it ends."""
    summary = map_ranks.map_ranks(request.app.state.redis, job.id)
    return MapProgressPublic.model_validate(summary)


@router.get("/{job_id}/follow-up", responses={**NOT_FOUND, 409: {"model": ErrorResponse}})
def get_follow_up(job: OwnedJob, settings: SettingsDep) -> FollowUpPublic:
    """The job that can work on this job's output (e.g. an SAE on extracted activations),
    prefilled; `depends_on` names this job while it has not succeeded. 404 for kinds that
    offer none, 409 for a job that ended without output."""
    return FollowUpPublic.model_validate(follow_up.follow_up(job, settings.data_dir))


@router.get("/{job_id}/follow-ups", responses=NOT_FOUND)
def list_follow_ups(job: OwnedJob, session: SessionDep, settings: SettingsDep) -> list[JobPublic]:
    """The jobs that name this one as their source (its follow-up's source field: the
    evaluations of an SAE job's checkpoints), newest first, at most 50."""
    found = follow_up.follow_up_jobs(session, job, settings.data_dir)
    return [JobPublic.model_validate(j) for j in found]


def _log_path(settings_data_dir: Path, job: Job, rank: int) -> Path:
    if not 0 <= rank < job.world_size:
        raise InvalidInput([("rank", f"job {job.id} has ranks 0..{job.world_size - 1}")])
    return settings_data_dir / "jobs" / str(job.id) / f"rank{rank}.log"


def _tail(path: Path, lines: int) -> tuple[str, int]:
    """The last `lines` lines of a file, and the offset where the file ends."""
    if not path.is_file():
        return "", 0
    size = path.stat().st_size
    with path.open("rb") as fh:
        block = min(size, _budget(lines))
        fh.seek(size - block)
        # Only the block: a rank printing fast grows the file by megabytes while this runs, and
        # reading on to its end made a tail of 100 lines take 175 ms (bench/log_flood.py).
        text = fh.read(block).decode(errors="replace")
    return _last_lines(text, lines), size


def _budget(lines: int) -> int:
    return max(64 * 1024, lines * 512)


def _last_lines(text: str, lines: int) -> str:
    return "".join(text.splitlines(keepends=True)[-lines:]) if lines else ""


@router.get(
    "/{job_id}/logs", responses=NOT_FOUND, response_class=PlainTextResponse, response_model=None
)
def get_logs(
    job: OwnedJob,
    session: SessionDep,
    settings: SettingsDep,
    request: Request,
    rank: Annotated[int, Query(ge=0, le=63)] = 0,
    tail: Annotated[int, Query(ge=0, le=MAX_TAIL_LINES)] = 200,
    follow: Annotated[bool, Query(description="keep streaming until the job ends")] = False,
) -> PlainTextResponse | StreamingResponse:
    """A rank's stdout and stderr: the last `tail` lines; with `follow`, then new output.

    Read from the rank's file when it is on this machine, else from the copy its node's worker
    stored (the start and the newest output of a very long log; a line marks what was left
    out)."""
    path = _log_path(settings.data_dir, job, rank)
    factory = request.app.state.sessionmaker
    if not path.is_file():
        chunks = rank_logs.tail_chunks(session, job.id, rank, tail, _budget(tail))
        reader = rank_logs.Reader(job.id, rank)
        text = _last_lines(reader.feed(chunks).decode(errors="replace"), tail)
        if not follow:
            return PlainTextResponse(text)
        stream = _follow_stored(reader, text, job.id, rank, factory, request)
        return StreamingResponse(stream, media_type="text/plain")
    text, offset = _tail(path, tail)
    if not follow:
        return PlainTextResponse(text)
    return StreamingResponse(
        _follow(path, text, offset, job.id, factory, request), media_type="text/plain"
    )


async def _follow(
    path: Path, first: str, offset: int, job_id: int, factory: object, request: Request
) -> AsyncIterator[bytes]:
    if first:
        yield first.encode()
    while not await request.is_disconnected():
        chunk, offset = await asyncio.to_thread(_read_from, path, offset)
        if chunk:
            yield chunk
            continue
        if await asyncio.to_thread(_finished, factory, job_id):
            chunk, offset = await asyncio.to_thread(_read_from, path, offset)
            if chunk:
                yield chunk
            return
        await asyncio.sleep(FOLLOW_POLL_S)


async def _follow_stored(
    reader: rank_logs.Reader,
    first: str,
    job_id: int,
    rank: int,
    factory: object,
    request: Request,
) -> AsyncIterator[bytes]:
    """New chunks as the rank's node stores them, until the job has ended and the node has
    shipped the rank's last one (or, if that node is gone, FINAL_WAIT_S after the end)."""
    if first:
        yield first.encode()
    ended_at: float | None = None
    while not await request.is_disconnected():
        try:
            chunks = await asyncio.to_thread(_stored_after, factory, job_id, rank, reader.last_seq)
            if (
                not chunks
                and ended_at is None
                and await asyncio.to_thread(_finished, factory, job_id)
            ):
                ended_at = time.monotonic()
        except DBAPIError:
            await asyncio.sleep(FOLLOW_POLL_S)  # the database is away: the copy waits for it
            continue
        if chunks:
            yield reader.feed(chunks)
            continue
        if ended_at is not None and (reader.ended or time.monotonic() - ended_at > FINAL_WAIT_S):
            return
        await asyncio.sleep(FOLLOW_POLL_S)


def _stored_after(factory: object, job_id: int, rank: int, after_seq: int) -> list[rank_logs.Chunk]:
    with factory() as session:  # type: ignore[operator]
        return rank_logs.chunks_after(session, job_id, rank, after_seq)


def _read_from(path: Path, offset: int) -> tuple[bytes, int]:
    if not path.is_file():
        return b"", offset
    with path.open("rb") as fh:
        fh.seek(offset)
        chunk = fh.read(256 * 1024)
    return chunk, offset + len(chunk)


def _finished(factory: object, job_id: int) -> bool:
    with factory() as session:  # type: ignore[operator]
        return JobStatus(get_job(session, job_id).status) in job_state.TERMINAL


@router.get("/{job_id}/segments", responses=NOT_FOUND)
def list_segments(job: OwnedJob, session: SessionDep) -> list[JobSegmentPublic]:
    """Each stretch of the job on devices, oldest first: a preempted job resumes in a new one."""
    return [JobSegmentPublic.model_validate(r) for r in runs.segments(session, job.id)]


@router.get("/{job_id}/checkpoints", responses=NOT_FOUND)
def list_checkpoints(
    job: OwnedJob, session: SessionDep, settings: SettingsDep
) -> list[CheckpointPublic]:
    """Live checkpoints, oldest first; each file downloads from its `url`. A checkpoint on
    another node's disk (the API runs elsewhere, no shared data directory) lists the sizes that
    node reported, no `url`, and its `location` to copy it from."""
    listed = []
    for c in checkpoints.list_checkpoints(session, job.id):
        files = checkpoints.listed_files(settings.data_dir, c)
        elsewhere = c.node is not None and not all(f.here for f in files)
        listed.append(
            CheckpointPublic(
                **CheckpointFields.model_validate(c).model_dump(),
                files=[
                    CheckpointFilePublic(
                        name=f.name,
                        size_bytes=f.size_bytes,
                        url=f"/api/jobs/{job.id}/checkpoints/{c.step}/files/{f.name}"
                        if f.here
                        else None,
                    )
                    for f in files
                ],
                node=c.node,
                location=f"{c.node}:{c.node_path}" if elsewhere else None,
            )
        )
    return listed


@router.get("/{job_id}/checkpoints/{step}/files/{name}", responses=NOT_FOUND)
def download_checkpoint_file(
    job: OwnedJob,
    session: SessionDep,
    settings: SettingsDep,
    step: Annotated[int, PathParam(ge=0, le=2**62)],
    name: Annotated[str, PathParam(min_length=1, max_length=128)],
) -> FileResponse:
    """One file of a checkpoint; only files the checkpoint lists, only inside the data dir."""
    path = checkpoints.checkpoint_file(session, job.id, step, name, settings.data_dir)
    return FileResponse(path, filename=name, media_type="application/octet-stream")


@router.post(
    "/{job_id}/resume",
    status_code=status.HTTP_201_CREATED,
    responses={**NOT_FOUND, 409: {"model": ErrorResponse}},
)
def resume_job(
    job: OwnedJob,
    session: SessionDep,
    settings: SettingsDep,
    request: Request,
    user: CurrentUser,
    body: JobResume | None = None,
) -> JobPublic:
    """A new job continuing this one from its newest complete checkpoint."""
    checks.check_may_submit(job.kind, user)  # resuming a script runs its code again
    resumed = resume_service.resume_job(
        session, job.id, body or JobResume(), owner=user.name, data_dir=settings.data_dir
    )
    audit.record(session, user, audit.JOB_RESUME, f"job:{resumed.id}", resume_from=job.id)
    session.commit()
    state = request.app.state
    if dispatch_job(state.celery, resumed.id, resumed.node, state.redis_breaker):
        mark_dispatched(session, resumed.id)
        session.commit()
    return JobPublic.model_validate(resumed)
