"""Every check a submit makes beyond the request's schema, in one place: the kind's config
(strict, finite, no NUL character: Postgres would refuse it), who may submit it and what it
reads, its scheduling fields and the queued-jobs quota, its inputs (a missing dataset would
fail only at start) and the host memory of CPU ranks. Each refusal names the field. The submit
pipeline (submission.py) calls them in its order."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.core.config import get_settings
from gpudeck.core.security import Principal
from gpudeck.engine.kinds import InputError, JobKind, get_kind, refused_kinds, registry
from gpudeck.models import Job, JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.accounts.users import may_run_code
from gpudeck.services.cluster.nodes import NodeFacts
from gpudeck.services.errors import Conflict, Forbidden, InvalidInput
from gpudeck.services.executors.clusters import ClientFor, slurm_client
from gpudeck.services.queue import waiting as queue_waiting
from gpudeck.services.queue.plan import Quota
from gpudeck.services.submit.config_errors import config_errors


@dataclass(frozen=True)
class Submitter:
    """Who submits, and the operator's time limits."""

    owner: str
    is_admin: bool = False
    default_time_limit_s: int = 24 * 3600
    max_time_limit_s: int = 30 * 86400
    # Added to a sharing job's estimate on each device: the API passes its settings' figure;
    # a caller naming only the owner gets the configured one (GPUDECK_CUDA_CONTEXT_RESERVE_BYTES).
    cuda_context_reserve_bytes: int = field(
        default_factory=lambda: get_settings().cuda_context_reserve_bytes
    )
    # How a job naming a cluster reaches Slurm for its checks: the API passes its own.
    slurm_clients: ClientFor = slurm_client


def refuse_nul(value: Any, field: str) -> None:
    """Postgres text and JSONB cannot hold U+0000: a 422 naming the field, not a 500."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInput([(field, "contains a NUL character (U+0000)")])
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_nul(key, f"{field}.{key}" if "\x00" not in str(key) else field)
            refuse_nul(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            refuse_nul(item, f"{field}.{i}")


def refuse_non_finite(value: Any, field: str) -> None:
    """NaN and the infinities are no number a job takes, and JSON (so JSONB) cannot hold them:
    a 422 naming the field, wherever in the config they sit (a map job's kwargs too)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput([(field, f"must be a finite number, not {value!r}")])
    if isinstance(value, dict):
        for key, item in value.items():
            refuse_non_finite(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            refuse_non_finite(item, f"{field}.{i}")


def check_kind_inputs(kind: JobKind, config: BaseModel, data_dir: Path) -> None:
    """The kind's own submit-time check (a dataset that must exist, ...), as a 422."""
    check = kind.resolve_check_inputs()
    if check is None:
        return
    try:
        check(config, data_dir)
    except InputError as exc:
        raise InvalidInput([(f"config.{exc.field}", exc.reason)]) from None


class InsufficientHostMemory(Conflict):
    def __init__(self, field: str, world_size: int, bytes_per_device: int, host_bytes: int) -> None:
        gib = 1024**3
        super().__init__(
            message=(
                f"{world_size} ranks x {bytes_per_device / gib:.2f} GiB = "
                f"{world_size * bytes_per_device / gib:.2f} GiB exceeds this machine's "
                f"{host_bytes / gib:.2f} GiB of memory (simulated devices run on the CPU; "
                "force does not lift this)"
            ),
            field=field,
            code="insufficient_host_memory",
            extra={
                "world_size": world_size,
                "bytes_per_device": bytes_per_device,
                "host_memory_bytes": host_bytes,
            },
        )


def check_host_memory(
    node: NodeFacts | None, world_size: int, bytes_per_device: int | None, field: str
) -> None:
    """Ranks on simulated devices are CPU processes of one machine: together they must fit in
    its memory, whatever `force` says (force skips the free-memory check, not physics).
    Simulated nodes run beside the API (gpudeck run), so this machine's memory is theirs."""
    if bytes_per_device is None or node is None or node.source != "simulated":
        return
    host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if world_size * bytes_per_device > host_bytes:
        raise InsufficientHostMemory(field, world_size, bytes_per_device, host_bytes)


def validate_config(kind_name: str, config: dict[str, Any], world_size: int) -> dict[str, Any]:
    """The kind's own model validates the config; errors come back with their field paths."""
    kind = get_kind(kind_name)
    if kind is None:
        refused = refused_kinds().get(kind_name)
        if refused is not None:
            raise InvalidInput([("kind", f"{kind_name!r} is unavailable: {refused.reason}")])
        known = ", ".join(sorted(registry()))
        raise InvalidInput([("kind", f"unknown job kind {kind_name!r}; known kinds: {known}")])
    refuse_nul(config, "config")
    refuse_non_finite(config, "config")
    try:
        # Strict, as JSON: the same rules for every kind, plugins included ("16" is not an
        # int, true is not a number), whatever the kind's own model_config says.
        model = kind.config_model.model_validate_json(json.dumps(config), strict=True)
    except ValidationError as exc:
        raise InvalidInput(config_errors(kind.config_model, exc)) from None
    if kind.batch_size_field:
        batch = getattr(model, kind.batch_size_field)
        if batch % world_size:
            raise InvalidInput(
                [
                    (
                        f"config.{kind.batch_size_field}",
                        f"{batch} does not split evenly across {world_size} devices",
                    )
                ]
            )
    return model.model_dump(mode="json")


def _waits_for_unfinished(session: Session, depends_on: Sequence[int]) -> bool:
    """A job waiting for others may read what they will write (an SAE on an extraction's
    output): its inputs are checked when its ranks start, not at submit."""
    if not depends_on:
        return False
    statuses = session.scalars(select(Job.status).where(Job.id.in_(depends_on)))
    return any(JobStatus(s) != JobStatus.succeeded for s in statuses)


def inputs_due(session: Session, spec: JobCreate, data_dir: Path | None) -> bool:
    """Whether a submit checks its kind's inputs now: with a data directory, unless the job
    waits for unfinished jobs (their outputs may be its inputs)."""
    return data_dir is not None and not _waits_for_unfinished(session, spec.depends_on)


def check_inputs(kind_name: str, config: dict[str, Any], data_dir: Path) -> None:
    """The kind's inputs (a file dataset, a model directory) exist under `data_dir` now."""
    kind = get_kind(kind_name)
    assert kind is not None  # validate_config refused unknown kinds
    check_kind_inputs(kind, kind.config_model.model_validate(config), data_dir)


def check_scheduling(
    session: Session, spec: JobCreate, who: Submitter, quota: Quota, *, jobs: int = 1
) -> int:
    """The scheduling fields beyond their schema, for `jobs` jobs of one spec (a sweep's
    members); returns their time limit."""
    if spec.priority > 0 and not who.is_admin:
        raise Forbidden("only an admin may submit with a priority above 0", field="priority")
    limit = spec.time_limit_s or who.default_time_limit_s
    if limit > who.max_time_limit_s:
        raise InvalidInput(
            [("time_limit_s", f"{limit} s exceeds the maximum of {who.max_time_limit_s} s")]
        )
    if not spec.queue and (spec.hold or spec.depends_on):
        field = "hold" if spec.hold else "depends_on"
        raise InvalidInput([(field, "a job that must wait cannot be sent with queue: false")])
    if spec.depends_on:
        found = set(session.scalars(select(Job.id).where(Job.id.in_(spec.depends_on))))
        for i, dep in enumerate(spec.depends_on):
            if dep not in found:
                raise InvalidInput([(f"depends_on.{i}", f"job {dep} does not exist")])
    most = quota.max_queued_jobs
    if most is not None and queue_waiting.queued_count(session, who.owner) + jobs > most:
        these = f"; this sweep has {jobs}" if jobs > 1 else ""
        raise Conflict(
            message=f"quota: {who.owner} may have {most} jobs queued{these}",
            field="queue",
            code="quota_exceeded",
        )
    return limit


def check_reads_own_job(
    session: Session,
    kind_name: str,
    config: dict[str, Any],
    who: Submitter,
    allowed: set[int] | None = None,
) -> None:
    """A kind that reads another job's checkpoints or output (JobKind.reads_job_field) reads
    only its submitter's jobs, unless an admin submits: the figures it makes from them are
    its owner's, and another user's job's are not theirs to see. `allowed`: jobs already
    found readable by this submitter (a sweep's members mostly read the same one); those
    that pass are added."""
    kind = get_kind(kind_name)
    field = kind.reads_job_field if kind else None
    if field is None or config.get(field) is None:
        return
    job_id = int(config[field])
    if allowed is not None and job_id in allowed:
        return
    owner = session.scalar(select(Job.owner).where(Job.id == job_id))
    if owner is None:
        raise InvalidInput([(f"config.{field}", f"job {job_id} does not exist")])
    if owner != who.owner and not who.is_admin:
        raise Forbidden(
            f"job {job_id} is {owner}'s: only {owner} or an admin may run a job on it",
            field=f"config.{field}",
        )
    if allowed is not None:
        allowed.add(job_id)


def check_may_submit(kind_name: str, principal: Principal) -> None:
    """A kind that runs the user's own code (`script`) needs the `run_code` permission."""
    kind = get_kind(kind_name)
    if kind is not None and kind.runs_user_code and not may_run_code(principal):
        raise Forbidden(
            f"{kind_name} jobs run your own code: an admin must grant you run_code", field="kind"
        )
