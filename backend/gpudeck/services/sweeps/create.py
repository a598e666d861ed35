"""Creating a sweep: its members expanded from the spec, checked and inserted through the submit
pipeline (submit.submission), in one transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from gpudeck.models import Job, Sweep
from gpudeck.schemas.sweeps import (
    MAX_MEMBERS,
    SweepCreate,
)
from gpudeck.services.errors import DomainError, InvalidInput, TooLarge
from gpudeck.services.jobs import state as job_state
from gpudeck.services.submit import checks, submission
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.sweeps.params import (
    MAX_MEMBERS_ON_CLUSTER,
    TooManyMembers,
    members,
    with_values,
)


def expand(spec: SweepCreate) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(values, config) of every member, each config validated as its job's would be; the
    first invalid member is refused with its index, its values and the field."""
    try:
        most = MAX_MEMBERS if spec.job.cluster is None else MAX_MEMBERS_ON_CLUSTER
        values = members(spec.parameters, most)
    except TooManyMembers as exc:
        raise TooLarge(message=str(exc), field="parameters", code="too_many_members") from None
    out = []
    for index, chosen in enumerate(values):
        config = with_values(spec.job.config, chosen)
        try:
            config = checks.validate_config(spec.job.kind, config, spec.job.world_size)
        except InvalidInput as exc:
            raise _of_member(exc, index, chosen) from None
        out.append((chosen, config))
    return out


def _shown(chosen: dict[str, Any]) -> str:
    return ", ".join(f"{p}={v!r}" for p, v in chosen.items())


def _of_member(exc: InvalidInput, index: int, chosen: dict[str, Any]) -> InvalidInput:
    """The member's errors, each under `members[i]` and saying its values."""
    errors: list[tuple[str, str]] = exc.extra["errors"]
    return InvalidInput(
        [
            (f"members[{index}].{f}", f"{why} (member {index}: {_shown(chosen)})")
            for f, why in errors
        ]
    )


def create_sweep(
    session: Session,
    spec: SweepCreate,
    *,
    owner: Submitter,
    data_dir: Path | None = None,
) -> Sweep:
    """The sweep and all its members, or nothing (the caller's transaction).

    The submit pipeline of a single job (submit/submission.py), its shared steps once: where
    the jobs may run, every member's config (`expand`), the scheduling fields and the
    queued-jobs quota for all members; then each member's checks and row. The members are
    inserted together and never start at submit: the scheduler starts them, at most
    `max_parallel` at once."""
    if not spec.job.queue:
        raise InvalidInput([("job.queue", "a sweep's members wait for their turn: queue true")])
    job = spec.job
    placement = submission.where_it_runs(session, job, owner)
    planned = expand(spec)
    prepared = submission.prepare(session, job, owner, placement, data_dir, jobs=len(planned))
    name = spec.name or f"{job.kind}-sweep"
    width = len(str(len(planned) - 1))
    rows = []
    for index, (chosen, config) in enumerate(planned):
        try:
            row = prepared.member_row(session, config, f"{name}-{index:0{width}d}")
        except InvalidInput as exc:  # it could never fit a device, ...
            raise _of_member(exc, index, chosen) from None
        except DomainError as exc:
            exc.message = f"member {index} ({_shown(chosen)}): {exc.message}"
            raise
        rows.append(row | {"sweep_index": index, "sweep_params": chosen})
    sweep = Sweep(
        name=name,
        owner=owner.owner,
        kind=job.kind,
        spec=spec.model_dump(mode="json"),
        max_parallel=spec.max_parallel,
    )
    session.add(sweep)
    session.flush()
    # In index order: the members' ids (the queue's tie-break) follow their indices.
    session.execute(insert(Job), [row | {"sweep_id": sweep.id} for row in rows])
    session.flush()
    job_state.wake_scheduler(session, arrival=True)
    return sweep
