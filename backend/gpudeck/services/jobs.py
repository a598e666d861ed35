"""Jobs: create (with reservation), read, list, cancel. Takes a Session, never commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Device, Job, JobStatus, Node
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services import job_state
from gpudeck.services.allocation import Chosen, raise_if_held, reserve, reserve_count
from gpudeck.services.errors import InvalidInput, InvalidTransition, JobNotFound, UnknownDevice
from gpudeck.services.placement import InsufficientMemory, LiveMemory, short_devices
from gpudeck.trainer.kinds import get_kind, registry


def validate_config(kind_name: str, config: dict[str, Any], world_size: int) -> dict[str, Any]:
    """The kind's own model validates the config; errors come back with their field paths."""
    kind = get_kind(kind_name)
    if kind is None:
        known = ", ".join(sorted(registry()))
        raise InvalidInput([("kind", f"unknown job kind {kind_name!r}; known kinds: {known}")])
    try:
        model = kind.config_model.model_validate(config)
    except ValidationError as exc:
        raise InvalidInput(
            [
                (".".join(["config", *(str(p) for p in err["loc"])]), err["msg"])
                for err in exc.errors()
            ]
        ) from None
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


def _default_node(session: Session) -> str:
    nodes = session.scalars(select(Node.name).order_by(Node.name)).all()
    if len(nodes) == 1:
        return nodes[0]
    if not nodes:
        raise InvalidInput([("node", "no node has registered any devices yet")])
    raise InvalidInput([("node", f"several nodes exist ({', '.join(nodes)}); name one")])


def resolve_devices(session: Session, refs: list[DeviceRef]) -> tuple[str, list[Chosen]]:
    default = None if all(r.node for r in refs) else _default_node(session)
    nodes = {r.node or default for r in refs}
    if len(nodes) > 1:
        raise InvalidInput([("devices", "all devices of a job must be on one node")])
    node = str(nodes.pop())
    inventory = session.scalars(select(Device).where(Device.node == node)).all()
    by_uuid = {d.uuid: d for d in inventory}
    by_index = {d.index: d for d in inventory}
    chosen: list[Chosen] = []
    for i, ref in enumerate(refs):
        device = by_uuid.get(ref.uuid or "") if ref.uuid else by_index.get(int(ref.index or 0))
        if device is None:
            ident = f"uuid {ref.uuid}" if ref.uuid else f"index {ref.index}"
            raise UnknownDevice(f"devices.{i}", node, ident)
        if any(c.uuid == device.uuid for c in chosen):
            raise InvalidInput([(f"devices.{i}", f"device {device.index} is listed twice")])
        chosen.append(Chosen(node, device.uuid, device.index))
    return node, chosen


def estimate_bytes_per_device(
    kind_name: str, config: dict[str, Any], world_size: int
) -> int | None:
    """The kind's memory estimate for a CUDA device (simulated devices stand for GPUs too);
    None for kinds without one. Cached by config inside the estimator."""
    kind = get_kind(kind_name)
    estimate = kind.resolve_estimate() if kind else None
    if kind is None or estimate is None:
        return None
    return int(estimate(kind.config_model.model_validate(config), world_size).bytes_per_device)


def create_job(
    session: Session,
    spec: JobCreate,
    *,
    owner: str,
    live: dict[tuple[str, str], LiveMemory] | None = None,
) -> Job:
    """Insert the job and reserve its devices in the caller's transaction.

    `live` is the nodes' fresh free memory; unless the request says `force`, devices that
    cannot hold the job's estimate are refused (explicit) or passed over (count)."""
    config = validate_config(spec.kind, spec.config, spec.world_size)
    estimate = estimate_bytes_per_device(spec.kind, config, spec.world_size)
    check = live is not None and estimate is not None and not spec.force
    if spec.devices is not None:
        node, devices = resolve_devices(session, spec.devices)
        # Fast refusal for the common conflict, before any insert; the unique index still
        # decides every race this read cannot see.
        raise_if_held(session, node, devices)
        short = short_devices([(d.node, d.uuid) for d in devices], estimate or 0, live or {})
        if check and short:
            raise InsufficientMemory(int(estimate or 0), short)
    else:
        node, devices = spec.node or _default_node(session), []
    job = Job(
        name=spec.name or f"{spec.kind}-job",
        kind=spec.kind,
        config=config,
        owner=owner,
        node=node,
        world_size=spec.world_size,
        status=JobStatus.queued,
        progress_total=config.get("steps"),
        estimate_bytes_per_device=estimate,
    )
    session.add(job)
    session.flush()
    if spec.devices is not None:
        reserve(session, job, devices)
    else:

        def fits(device: Device) -> bool:
            return not check or not short_devices(
                [(device.node, device.uuid)], estimate or 0, live or {}
            )

        reserve_count(session, job, spec.world_size, fits=fits)
    session.refresh(job, ["allocations"])
    return job


def get_job(session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise JobNotFound(job_id)
    return job


def list_jobs(
    session: Session, *, statuses: Sequence[str] | None, limit: int, offset: int
) -> tuple[list[Job], int]:
    query = select(Job)
    if statuses:
        query = query.where(Job.status.in_(statuses))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    jobs = session.scalars(query.order_by(Job.id.desc()).limit(limit).offset(offset)).all()
    return list(jobs), total


def cancel_job(session: Session, job_id: int) -> Job:
    """A queued job is cancelled at once; a starting or running one is asked to stop, and its
    worker finishes the transition after the final checkpoint."""
    job = job_state.lock_job(session, job_id)
    status = JobStatus(job.status)
    if status is JobStatus.queued:
        return job_state.transition(session, job_id, JobStatus.cancelled)
    if status in job_state.TERMINAL:
        raise InvalidTransition(job_id, status, JobStatus.cancelled)
    if job.cancel_requested_at is None:
        job.cancel_requested_at = func.now()
        session.flush()
        session.refresh(job)
    return job
