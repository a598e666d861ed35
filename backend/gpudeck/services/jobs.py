"""Jobs: create (with reservation), read, list, cancel. Takes a Session, never commits."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import String, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from gpudeck.core.security import Principal
from gpudeck.engine.kinds import get_kind, registry
from gpudeck.models import Allocation, Device, Job, JobStatus, Node
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services import fit, job_state, queue
from gpudeck.services.allocation import (
    Chosen,
    holders_by_node,
    raise_if_held,
    reserve,
    reserve_count,
)
from gpudeck.services.config_errors import config_errors
from gpudeck.services.errors import (
    Conflict,
    Forbidden,
    GpuBusy,
    InvalidInput,
    InvalidTransition,
    JobNotFound,
    NotEnoughDevices,
    UnknownDevice,
)
from gpudeck.services.inventory import OFFLINE_AFTER_S
from gpudeck.services.nodes import NodeFacts, node_facts, refuse_offline
from gpudeck.services.placement import InsufficientMemory, Readings, short_devices
from gpudeck.services.queue_plan import Dev, Quota, choose_spread
from gpudeck.services.recommend import default_safety_margin
from gpudeck.services.submit_checks import (
    check_host_memory,
    check_kind_inputs,
    refuse_non_finite,
    refuse_nul,
)
from gpudeck.services.users import may_run_code


def validate_config(kind_name: str, config: dict[str, Any], world_size: int) -> dict[str, Any]:
    """The kind's own model validates the config; errors come back with their field paths."""
    kind = get_kind(kind_name)
    if kind is None:
        known = ", ".join(sorted(registry()))
        raise InvalidInput([("kind", f"unknown job kind {kind_name!r}; known kinds: {known}")])
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


def steps_of(kind_name: str, config: dict[str, Any]) -> int | None:
    kind = get_kind(kind_name)
    field = kind.steps_field if kind else None
    return int(config[field]) if field and field in config else None


def _node_names(session: Session) -> list[str]:
    return list(session.scalars(select(Node.name).order_by(Node.name)))


def _default_node(session: Session, nodes: list[str] | None = None) -> str:
    """The one node there is, for a request that names none."""
    nodes = _node_names(session) if nodes is None else nodes
    if len(nodes) == 1:
        return nodes[0]
    if not nodes:
        raise InvalidInput([("node", "no node has registered any devices yet")])
    raise InvalidInput([("node", f"several nodes exist ({', '.join(nodes)}); name one")])


# Built once: every submit naming devices runs it (building a statement costs more CPU than
# running it).
_DEVICES_OF_NODES = select(Device).where(
    Device.node == any_(bindparam("nodes", type_=ARRAY(String)))
)


def resolve_devices(session: Session, refs: list[DeviceRef]) -> tuple[str, list[Chosen]]:
    """The devices a request names, on one node or several; returns (the first node, them).

    A job across nodes gets its ranks node by node (torchrun's layout: each node's ranks are
    contiguous), nodes in the order the request first names them; node rank 0, the first
    node, hosts the rendezvous and is the job's `node`."""
    node, chosen, _ = _resolve_with_rows(session, refs)
    return node, chosen


def _resolve_with_rows(
    session: Session, refs: list[DeviceRef]
) -> tuple[str, list[Chosen], list[Device]]:
    """resolve_devices, plus the chosen devices' inventory rows (by index): a submit reads
    them once."""
    default = None if all(r.node for r in refs) else _default_node(session)
    nodes = list(dict.fromkeys(str(r.node or default) for r in refs))
    inventory = session.scalars(_DEVICES_OF_NODES, {"nodes": nodes}).all()
    by_uuid = {(d.node, d.uuid): d for d in inventory}
    by_index = {(d.node, d.index): d for d in inventory}
    chosen: list[Chosen] = []
    for i, ref in enumerate(refs):
        node = str(ref.node or default)
        key = (node, ref.uuid) if ref.uuid else (node, int(ref.index or 0))
        device = by_uuid.get(key) if ref.uuid else by_index.get(key)  # type: ignore[arg-type]
        if device is None:
            ident = f"uuid {ref.uuid}" if ref.uuid else f"index {ref.index}"
            raise UnknownDevice(f"devices.{i}", node, ident)
        if any((c.node, c.uuid) == (node, device.uuid) for c in chosen):
            raise InvalidInput([(f"devices.{i}", f"device {device.index} is listed twice")])
        chosen.append(Chosen(node, device.uuid, device.index))
    chosen.sort(key=lambda c: nodes.index(c.node))  # stable: the request's order within a node
    wanted = {(c.node, c.uuid) for c in chosen}
    rows = sorted((d for d in inventory if (d.node, d.uuid) in wanted), key=lambda d: d.index)
    return nodes[0], chosen, rows


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


@dataclass(frozen=True)
class Submitter:
    """Who submits, and the operator's time limits."""

    owner: str
    is_admin: bool = False
    default_time_limit_s: int = 24 * 3600
    max_time_limit_s: int = 30 * 86400


def _waits_for_unfinished(session: Session, depends_on: Sequence[int]) -> bool:
    """A job waiting for others may read what they will write (an SAE on an extraction's
    output): its inputs are checked when its ranks start, not at submit."""
    if not depends_on:
        return False
    statuses = session.scalars(select(Job.status).where(Job.id.in_(depends_on)))
    return any(JobStatus(s) != JobStatus.succeeded for s in statuses)


def _check_scheduling(session: Session, spec: JobCreate, who: Submitter, quota: Quota) -> int:
    """The scheduling fields beyond their schema; returns the job's time limit."""
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
    if most is not None and queue.queued_count(session, who.owner) >= most:
        raise Conflict(
            message=f"quota: {who.owner} may have {most} jobs queued",
            field="queue",
            code="quota_exceeded",
        )
    return limit


def _never_fits(
    inventory: Sequence[Device],
    spec: JobCreate,
    node: str,
    devices: list[Chosen],
    estimate: int | None,
) -> None:
    """Refuse at once what no wait can cure: devices too small for the estimate even when
    empty (a queued job would wait forever). More devices than the node has is refused
    earlier, by `fit.check_count`. `inventory`: the requested devices, or all of the node."""
    if estimate is None or spec.force:
        return
    room = {
        d.uuid: d.memory_total_bytes - default_safety_margin(d.memory_total_bytes)
        for d in inventory
    }
    if devices:  # named
        small = [d for d in devices if room.get(d.uuid, 0) < estimate]
        if small:
            raise InsufficientMemory(
                estimate,
                [
                    {
                        "node": d.node,
                        "uuid": d.uuid,
                        "index": d.index,
                        "memory_free_bytes": None,
                        "usable_bytes": room.get(d.uuid, 0),
                    }
                    for d in small
                ],
            )
    elif sum(1 for r in room.values() if r >= estimate) < spec.world_size:
        raise NotEnoughDevices(
            spec.world_size, sum(1 for r in room.values() if r >= estimate), node
        )


def check_may_submit(kind_name: str, principal: Principal) -> None:
    """A kind that runs the user's own code (`script`) needs the `run_code` permission."""
    kind = get_kind(kind_name)
    if kind is not None and kind.runs_user_code and not may_run_code(principal):
        raise Forbidden(
            f"{kind_name} jobs run your own code: an admin must grant you run_code", field="kind"
        )


def create_job(
    session: Session,
    spec: JobCreate,
    *,
    owner: str | Submitter,
    read_live: Callable[[], Readings | None] = lambda: None,
    data_dir: Path | None = None,
    may_start_now: bool = True,
) -> Job:
    """Insert the job and, when it may start now, reserve its devices in the caller's
    transaction; otherwise it waits for the scheduler (`queue`, the default) or, with
    `queue: false`, the submission is refused as devices busy.

    It starts at once only when nothing waits ahead of it on its nodes (a stream of small
    jobs must not overtake a waiting large one), it holds no dependency and is not held.
    A job across nodes waits like any other: named devices on several nodes for exactly
    those, a count spread over nodes (`nodes`, `devices_per_node`) for the scheduler to gang
    it. `read_live` reads the nodes' fresh free memory (None: unknown); unless the request
    says `force`, devices that cannot hold the job's estimate are refused (explicit) or passed
    over (count). It is read only when the job may start now: a submit that queues needs no
    telemetry. With `data_dir`, a file dataset must exist there now, not only when the job
    starts. `may_start_now=False`: it waits for the scheduler whatever is free (a sweep's
    member: the scheduler keeps to the sweep's max_parallel)."""
    who = owner if isinstance(owner, Submitter) else Submitter(owner)
    refuse_nul(spec.config, "config")
    spread, spread_nodes = spec.node_counts, spec.nodes
    if spread is not None and spec.node is not None:
        raise InvalidInput([("node", "name no node for a count spread over nodes")])
    count_anywhere = spec.devices is None and spread is None and spec.node is None
    names = _node_names(session) if count_anywhere else []
    if len(names) > 1:
        # A count that names no node, with several nodes: any one node with room (`nodes:
        # 1`), chosen now or by the scheduler's pass, as the dashboard's count expects.
        spread, spread_nodes = (1,), 1
    if spec.devices is not None:
        node, devices, chosen_rows = _resolve_with_rows(session, spec.devices)
        inventory: Sequence[Device] = chosen_rows
    elif spread is not None:
        inventory = _online_devices(session)
        node, devices = (inventory[0].node if inventory else ""), []  # chosen below
    else:
        node, devices = spec.node or _default_node(session, names), []
        inventory = fit.node_devices(session, node)
        fit.check_count(inventory, node, spec.world_size)  # before any config error
    field = "devices" if spec.devices is not None else "count"
    facts: dict[str, NodeFacts] = {}
    if spread is None:  # a spread count only ever considers online nodes
        chosen_nodes = [d.node for d in devices] or [node]
        facts = node_facts(session, chosen_nodes)
        refuse_offline(facts, chosen_nodes, field)
    config = validate_config(spec.kind, spec.config, spec.world_size)
    if data_dir is not None and not _waits_for_unfinished(session, spec.depends_on):
        kind = get_kind(spec.kind)
        assert kind is not None  # validate_config refused unknown kinds
        check_kind_inputs(kind, kind.config_model.model_validate(config), data_dir)
    quota = queue.quota_of(session, who.owner)  # read once: the checks below share it
    time_limit = _check_scheduling(session, spec, who, quota)
    estimate = estimate_bytes_per_device(spec.kind, config, spec.world_size)
    judged = estimate is not None and not spec.force

    @functools.cache
    def live() -> Readings | None:  # read at most once, and only for a start now
        return read_live() if judged else None

    if estimate is not None and not spec.force:
        fit.check_fits(inventory, node, estimate, "config")
    if spread is not None:
        # Where it would go on an idle cluster: refused now if nowhere, ever.
        node = _idle_spread(inventory, spec, spread, None if spec.force else estimate)[0].node
    else:
        _never_fits(inventory, spec, node, devices, estimate)
    if node not in facts:  # a count spread over nodes: its node is known only now
        facts = node_facts(session, [node])
    check_host_memory(facts.get(node), spec.world_size, estimate, field)
    now = may_start_now and spec.queue and not spec.hold and not spec.depends_on
    now = now and _quota_allows(session, who, spec, quota)
    if spread is not None and (now or not spec.queue):
        readings = live()
        fit_to = estimate if readings is not None else None
        devices = _spread_now(session, inventory, spec, spread, fit_to, readings)
        node = devices[0].node if devices else node
        if not devices and not spec.queue:
            raise _no_room_across(session, inventory, spec, spread)
        now = bool(devices)
    nodes = list(dict.fromkeys(d.node for d in devices)) or [node]
    now = now and not queue.waiting_on_nodes(session, nodes)
    if now and not devices:
        # An unlocked look first: with too few devices free, a queueing count request need not
        # wait for the device-row locks to find that out.
        now = queue.free_devices(session, node) >= spec.world_size
    if not spec.queue:
        now = True
    named = spec.devices is not None
    job = Job(
        name=spec.name or f"{spec.kind}-job",
        kind=spec.kind,
        config=config,
        owner=who.owner,
        node=node,
        world_size=spec.world_size,
        status=JobStatus.queued,
        progress_total=steps_of(spec.kind, config),
        estimate_bytes_per_device=estimate,
        priority=spec.priority,
        time_limit_s=time_limit,
        depends_on=list(spec.depends_on),
        preemptible=spec.preemptible,
        held=spec.hold,
        requested_devices=[d.uuid for d in devices] if named else None,
        requested_nodes=[d.node for d in devices] if named and len(nodes) > 1 else None,
        spread_nodes=spread_nodes,
        devices_per_node=spec.devices_per_node,
    )
    if now:
        try:
            # Fast refusal for the common conflict, before any insert; the unique index still
            # decides every race this read cannot see.
            if devices:
                raise_if_held(session, devices)
                short = short_devices(
                    [(d.node, d.uuid) for d in devices], estimate or 0, live() or {}
                )
                if live() is not None and short:
                    raise InsufficientMemory(int(estimate or 0), short)
            session.add(job)
            session.flush()
            # In a savepoint: a count that finds no room gives back the device-row locks at
            # once, instead of holding them (and every concurrent submit) until commit.
            with session.begin_nested():
                fit_to = estimate if live() is not None else None
                _reserve_now(session, job, spec, devices, fit_to, live())
        except (GpuBusy, NotEnoughDevices, InsufficientMemory):
            if not spec.queue:
                raise
    if job.id is None:  # never reserved: it holds nothing (no reload, a queued submit is hot)
        job.allocations = []
        session.add(job)
        session.flush()
    else:
        session.refresh(job, ["allocations"])
    if not job.allocations:
        job_state.wake_scheduler(session, arrival=True)  # it waits: the scheduler places it
    return job


def _online_devices(session: Session) -> list[Device]:
    """Every device of the nodes whose sampler reports: a count spread over nodes uses no
    other (the scheduler's pass skips offline nodes the same way)."""
    fresh = func.now() - timedelta(seconds=OFFLINE_AFTER_S)
    return list(
        session.scalars(
            select(Device)
            .join(Node, Node.name == Device.node)
            .where(Node.last_seen_at >= fresh)
            .order_by(Device.node, Device.index)
        )
    )


def _shapes(spread: tuple[int, ...], count: int) -> str:
    return " or ".join(f"{m} x {count // m}" for m in spread) + " (nodes x devices)"


def _per_node(devices: Sequence[Device] | Sequence[Chosen]) -> str:
    counts = Counter(d.node for d in devices)
    return ", ".join(f"{n} {c}" for n, c in sorted(counts.items())) or "none"


def _idle_spread(
    inventory: Sequence[Device], spec: JobCreate, spread: tuple[int, ...], estimate: int | None
) -> list[Dev]:
    """The placement of a count spread over nodes on the online nodes as if idle (the pass's
    rule, queue_plan.choose_spread); a 409 when even that finds none: it could never start."""
    idle = [
        Dev(d.node, d.uuid, d.index, usable_bytes=d.memory_total_bytes - default_safety_margin(
            d.memory_total_bytes))
        for d in inventory
    ]  # fmt: skip
    chosen = choose_spread(idle, spec.world_size, spread, estimate)
    if chosen is None:
        held = " that hold its estimate" if estimate is not None else ""
        raise _not_enough_across(
            spec,
            spread,
            f"devices{held}, even idle (devices per online node: {_per_node(inventory)})",
        )
    return chosen


def _spread_now(
    session: Session,
    inventory: Sequence[Device],
    spec: JobCreate,
    spread: tuple[int, ...],
    estimate: int | None,
    live: Readings | None,
) -> list[Chosen]:
    """Free devices for a count spread over nodes now, by the pass's rule (fewest nodes, best
    fit); empty when there are none. Reserved like named devices, so the unique index still
    decides a race."""
    held = holders_by_node(session, [Chosen(d.node, d.uuid, d.index) for d in inventory])
    readings = live if estimate is not None else None  # no estimate: memory is not judged
    devs = [queue.plan_device(d, held, readings) for d in inventory]
    chosen = choose_spread(devs, spec.world_size, spread, estimate)
    return [Chosen(d.node, d.uuid, d.index) for d in chosen or []]


def _no_room_across(
    session: Session, inventory: Sequence[Device], spec: JobCreate, spread: tuple[int, ...]
) -> Conflict:
    """`queue: false` and no room now for a count spread over nodes."""
    held = holders_by_node(session, [Chosen(d.node, d.uuid, d.index) for d in inventory])
    free = [d for d in inventory if (d.node, d.uuid) not in held and not d.external_processes]
    return _not_enough_across(
        spec, spread, f"free devices now (free devices per node: {_per_node(free)})"
    )


def _not_enough_across(spec: JobCreate, spread: tuple[int, ...], what: str) -> Conflict:
    """No online nodes have room for a count spread over nodes; `what` says room of what."""
    return Conflict(
        message=f"no online nodes have {_shapes(spread, spec.world_size)} {what}",
        field="count",
        code="not_enough_devices",
        extra={"count": spec.world_size, "node_counts": list(spread)},
    )


def _quota_allows(session: Session, who: Submitter, spec: JobCreate, quota: Quota) -> bool:
    if quota.max_devices is None:
        return True
    held = session.scalar(
        select(func.count())
        .select_from(Allocation)
        .join(Job, Job.id == Allocation.job_id)
        .where(Job.owner == who.owner, Allocation.released_at.is_(None))
    )
    return int(held or 0) + spec.world_size <= quota.max_devices


def _reserve_now(
    session: Session,
    job: Job,
    spec: JobCreate,
    devices: list[Chosen],
    estimate: int | None,
    live: Readings | None,
) -> None:
    if devices:
        reserve(session, job, devices)
        return

    def fits(device: Device) -> bool:
        return estimate is None or not short_devices(
            [(device.node, device.uuid)], estimate, live or {}
        )

    reserve_count(session, job, spec.world_size, fits=fits)


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
