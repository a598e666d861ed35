"""Sweeps: many jobs from one spec (docs/sweeps.md). The members are ordinary jobs: each has
its own page, logs and checkpoints; the sweep's page compares them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, status

from gpudeck.api import queue_view
from gpudeck.api.deps import CurrentUser, SessionDep, submitter
from gpudeck.core.security import Principal
from gpudeck.engine.kinds import get_kind
from gpudeck.models import Sweep
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.sweeps import (
    SweepAnalysis,
    SweepCancelled,
    SweepCreate,
    SweepDraws,
    SweepParameters,
    SweepPatch,
    SweepPublic,
    SweepSummary,
)
from gpudeck.services.accounts import audit
from gpudeck.services.errors import Forbidden, InvalidInput, TooLarge
from gpudeck.services.submit import checks
from gpudeck.services.sweeps import analysis, control, create, params

router = APIRouter(prefix="/api/sweeps", tags=["sweeps"])
SweepId = Annotated[int, Path(ge=1, le=2**63 - 1, description="sweep id")]
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorResponse}}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={
        403: {"model": ErrorResponse, "description": "the kind needs run_code (script)"},
        409: {"model": ErrorResponse, "description": "members that could never fit"},
        413: {"model": ErrorResponse, "description": "more than 1,000 members"},
    },
)
def create_sweep(
    spec: SweepCreate, session: SessionDep, request: Request, user: CurrentUser
) -> SweepPublic:
    """Every member is validated as a job would be, then all are created in one transaction
    (or none: a 422 names the member's index, its values and the field). They wait for the
    scheduler, which runs at most `max_parallel` of them at once."""
    checks.check_may_submit(spec.job.kind, user)
    settings = request.app.state.settings
    sweep = create.create_sweep(
        session,
        spec,
        owner=submitter(request, user),
        data_dir=settings.data_dir,
    )
    audit.record(session, user, audit.SWEEP_SUBMIT, f"sweep:{sweep.id}", kind=sweep.kind)
    session.commit()
    return control.public(session, sweep)


@router.post(
    "/draws",
    responses={413: {"model": ErrorResponse, "description": "more than 1,000 members"}},
)
def draw_members(parameters: SweepParameters) -> SweepDraws:
    """Each member's values as a sweep of these parameters would have them (the same seeded
    draws), creating nothing: the new-job form previews a random sweep's draws before launch."""
    try:
        values = params.members(parameters)
    except params.TooManyMembers as exc:
        raise TooLarge(message=str(exc), field="parameters", code="too_many_members") from None
    return SweepDraws(count=len(values), members=values)


@router.get("")
def list_sweeps(
    session: SessionDep, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[SweepSummary]:
    return control.list_sweeps(session, limit)


@router.get("/{sweep_id}", responses=NOT_FOUND)
def get_sweep(sweep_id: SweepId, session: SessionDep, request: Request) -> SweepPublic:
    """The members with their status, parameter values and newest metrics; the waiting ones
    with their place and expected start (one scheduling pass, as the queue view runs)."""
    sweep = control.public(session, control.get_sweep(session, sweep_id))
    if any(m.status == "queued" for m in sweep.members):
        infos = queue_view.current_infos(session, request)
        for member in sweep.members:
            member.queue = infos.get(member.job_id) if member.status == "queued" else None
    return sweep


@router.get(
    "/{sweep_id}/analysis",
    responses=NOT_FOUND,  # its 422 (a metric no member reports) has the validation errors shape
)
def analyse_sweep(
    sweep_id: SweepId,
    session: SessionDep,
    metric: Annotated[
        str | None,
        Query(max_length=200, description="default: held-out explained variance, or the first"),
    ] = None,
    better: Annotated[
        Literal["min", "max"] | None, Query(description="default: min for losses, L0, dead")
    ] = None,
) -> SweepAnalysis:
    """A metric against every swept parameter: the best member, each parameter's Spearman
    rank correlation with the metric, whether its values want a log axis, and the best at the
    edge of the range searched ("lr best at the top of the range searched: widen it")."""
    sweep = control.public(session, control.get_sweep(session, sweep_id))
    kind = get_kind(sweep.kind)
    summary = [s.metric for s in kind.summary_metrics] if kind else []
    chosen = metric or analysis.default_metric(sweep.members, summary)
    if chosen is None:
        raise InvalidInput([("metric", "no member of this sweep reported a metric yet")])
    return analysis.analyse(sweep.members, sweep.spec, chosen, better)


def _owned(session: SessionDep, sweep_id: int, user: Principal) -> Sweep:
    sweep = control.get_sweep(session, sweep_id)
    if not user.may_manage(sweep.owner):
        raise Forbidden(f"sweep {sweep_id} belongs to {sweep.owner}", field="sweep_id")
    return sweep


@router.patch("/{sweep_id}", responses={**NOT_FOUND, 403: {"model": ErrorResponse}})
def patch_sweep(
    sweep_id: SweepId, body: SweepPatch, session: SessionDep, user: CurrentUser
) -> SweepPublic:
    """Change max_parallel while it runs: more members start at the next pass (on a Slurm
    cluster, its arrays' throttle is set: `scontrol update ArrayTaskThrottle`); lowered, no
    running member is stopped, and none starts until fewer run."""
    sweep = _owned(session, sweep_id, user)
    control.set_max_parallel(session, sweep_id, body.max_parallel)
    audit.record(
        session, user, audit.SWEEP_MAX_PARALLEL, f"sweep:{sweep_id}",
        max_parallel=body.max_parallel,
    )  # fmt: skip
    session.commit()
    return control.public(session, sweep)


@router.post("/{sweep_id}/cancel", responses={**NOT_FOUND, 403: {"model": ErrorResponse}})
def cancel_sweep(sweep_id: SweepId, session: SessionDep, user: CurrentUser) -> SweepCancelled:
    """Every member not yet ended: the waiting ones are cancelled at once, a running one stops
    after its final checkpoint. Audited as the sweep's cancel and each member's."""
    sweep = _owned(session, sweep_id, user)
    done = control.cancel_sweep(session, sweep_id)
    audit.record(session, user, audit.SWEEP_CANCEL, f"sweep:{sweep_id}")
    members = [f"job:{j}" for j in [*done.ended, *done.stopping]]
    audit.record_many(session, user, audit.JOB_CANCEL, members, sweep=sweep_id)
    session.commit()
    return SweepCancelled(
        **dict(control.public(session, sweep)),
        cancelled=len(done.ended),
        stopping=len(done.stopping),
    )


@router.post("/{sweep_id}/resume", responses={**NOT_FOUND, 403: {"model": ErrorResponse}})
def resume_sweep(
    sweep_id: SweepId, session: SessionDep, request: Request, user: CurrentUser
) -> SweepPublic:
    """Every member that failed or was cancelled (lost, timed out) runs again, from its newest
    checkpoint where it has one; they wait for their turn under max_parallel."""
    sweep = _owned(session, sweep_id, user)
    checks.check_may_submit(sweep.kind, user)
    again = control.resume_sweep(
        session,
        sweep_id,
        owner=submitter(request, user),
        data_dir=request.app.state.settings.data_dir,
    )
    audit.record(session, user, audit.JOB_RESUME, f"sweep:{sweep_id}", jobs=again)
    session.commit()
    return control.public(session, sweep)


@router.post("/{sweep_id}/hold", responses={**NOT_FOUND, 403: {"model": ErrorResponse}})
def hold_sweep(sweep_id: SweepId, session: SessionDep, user: CurrentUser) -> SweepPublic:
    """Every member still waiting for devices is held; running ones go on."""
    return _set_held(session, sweep_id, user, held=True)


@router.post("/{sweep_id}/release", responses={**NOT_FOUND, 403: {"model": ErrorResponse}})
def release_sweep(sweep_id: SweepId, session: SessionDep, user: CurrentUser) -> SweepPublic:
    return _set_held(session, sweep_id, user, held=False)


def _set_held(session: SessionDep, sweep_id: int, user: Principal, *, held: bool) -> SweepPublic:
    sweep = _owned(session, sweep_id, user)
    control.set_sweep_held(session, sweep_id, held)
    action = audit.JOB_HOLD if held else audit.JOB_RELEASE
    audit.record(session, user, action, f"sweep:{sweep_id}")
    session.commit()
    return control.public(session, sweep)
