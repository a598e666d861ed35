"""Where a submitted job may run, resolved once from its request: a small typed value that the
submit's checks and its reservation read, instead of a chain that reassigns the node and the
devices case by case.

Three shapes of request (schemas.jobs.JobCreate): named devices (on one node or several), a
count on one node, and a count spread over nodes (`nodes`, `devices_per_node`, or a count that
names no node when there are several). `resolve` reads the inventory once and refuses what is
wrong with the request whatever the job's config (unknown devices, more devices than the node
has, offline nodes); `Placement.home_node` then refuses what its memory estimate can never fit,
even on idle devices. Both are pure reads: a sweep resolves its spec once and checks each
member's estimate against the same value (services/sweeps/create.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import String, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from gpudeck.models import Device, Node
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services.cluster.inventory import OFFLINE_AFTER_S
from gpudeck.services.cluster.nodes import NodeFacts, node_facts, refuse_offline
from gpudeck.services.errors import Conflict, InvalidInput, NotEnoughDevices, UnknownDevice
from gpudeck.services.placement import fit
from gpudeck.services.placement.allocation import Chosen
from gpudeck.services.placement.live_memory import InsufficientMemory
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.queue.plan import Dev, choose_spread
from gpudeck.services.submit.checks import check_host_memory


@dataclass(frozen=True)
class Placement:
    """Where one request may run.

    `node`: the job's node — the first named device's (node rank 0 hosts the rendezvous) or the
    count's; for a count spread over nodes, the node of its placement on idle devices (known
    after `home_node`). `named`: the devices the request names, in rank order; empty for a
    count. `spread`: the node counts a count spread over nodes may take, fewest first; None
    otherwise. `inventory`: the devices it may run on (the named ones, the node's, or every
    online node's); `facts`: their nodes' facts."""

    node: str
    named: tuple[Chosen, ...]
    spread: tuple[int, ...] | None
    spread_nodes: int | None
    inventory: tuple[Device, ...]
    facts: Mapping[str, NodeFacts]

    @property
    def field(self) -> str:
        """The request field an error about where it runs names."""
        return "devices" if self.named else "count"

    @property
    def nodes(self) -> list[str]:
        """The nodes the named devices are on, in rank order (a count: its node)."""
        return list(dict.fromkeys(d.node for d in self.named)) or [self.node]

    def home_node(self, spec: JobCreate, estimate: int | None) -> str:
        """The job's node, once what its estimate can never fit is refused: devices too small
        even when empty (a queued job would wait forever), on a simulated node ranks that
        together exceed the machine's memory. `force` skips the first, never the second."""
        judged = None if spec.force else estimate
        node = self.node
        if judged is not None:
            fit.check_fits(self.inventory, judged, "config")
        if self.spread is not None:
            # Where it would go on an idle cluster: refused now if nowhere, ever.
            node = _idle_spread(self.inventory, spec, self.spread, judged)[0].node
        elif judged is not None:
            _never_fits(self, spec, judged)
        check_host_memory(self.facts.get(node), spec.world_size, estimate, self.field)
        return node


def resolve(session: Session, spec: JobCreate) -> Placement:
    """The request's placement, read once; refuses unknown or repeated devices, a count beyond
    its node, and offline nodes (before any error in the config: where a job runs is the first
    thing its author reads)."""
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
        node, named, inventory = _resolve_named(session, spec.devices)
        facts = node_facts(session, [d.node for d in named])
        refuse_offline(facts, [d.node for d in named], "devices")
        return Placement(node, tuple(named), None, None, tuple(inventory), facts)
    if spread is not None:
        online = _online_devices(session)
        # Every online node's facts at once: which node the job gets depends on its estimate.
        facts = node_facts(session, sorted({d.node for d in online}))
        return Placement("", (), spread, spread_nodes, tuple(online), facts)
    node = spec.node or _default_node(session, names)
    devices = fit.node_devices(session, node)
    fit.check_count(devices, node, spec.world_size)
    facts = node_facts(session, [node])
    refuse_offline(facts, [node], "count")
    return Placement(node, (), None, None, tuple(devices), facts)


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


def _resolve_named(
    session: Session, refs: list[DeviceRef]
) -> tuple[str, list[Chosen], list[Device]]:
    """The devices a request names, on one node or several: (the first node, them, their
    inventory rows by index), read once.

    A job across nodes gets its ranks node by node (torchrun's layout: each node's ranks are
    contiguous), nodes in the order the request first names them; node rank 0, the first
    node, hosts the rendezvous and is the job's `node`."""
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


def _usable(device: Device) -> int:
    return usable_when_idle(device.memory_total_bytes)


def _never_fits(placement: Placement, spec: JobCreate, estimate: int) -> None:
    """Named devices or a count on one node that cannot hold the estimate even when empty.
    More devices than the node has is refused earlier, by `fit.check_count`."""
    room = {d.uuid: _usable(d) for d in placement.inventory}
    if placement.named:
        small = [d for d in placement.named if room.get(d.uuid, 0) < estimate]
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
        return
    holding = sum(1 for r in room.values() if r >= estimate)
    if holding < spec.world_size:
        raise NotEnoughDevices(spec.world_size, holding, placement.node)


def _idle_spread(
    inventory: Sequence[Device], spec: JobCreate, spread: tuple[int, ...], estimate: int | None
) -> list[Dev]:
    """The placement of a count spread over nodes on the online nodes as if idle (the pass's
    rule, queue_plan.choose_spread); a 409 when even that finds none: it could never start."""
    idle = [Dev(d.node, d.uuid, d.index, usable_bytes=_usable(d)) for d in inventory]
    chosen = choose_spread(idle, spec.world_size, spread, estimate)
    if chosen is None:
        held = " that hold its estimate" if estimate is not None else ""
        raise not_enough_across(
            spec,
            spread,
            f"devices{held}, even idle (devices per online node: {per_node(inventory)})",
        )
    return chosen


def per_node(devices: Sequence[Device] | Sequence[Chosen]) -> str:
    counts = Counter(d.node for d in devices)
    return ", ".join(f"{n} {c}" for n, c in sorted(counts.items())) or "none"


def not_enough_across(spec: JobCreate, spread: tuple[int, ...], what: str) -> Conflict:
    """No online nodes have room for a count spread over nodes; `what` says room of what."""
    shapes = " or ".join(f"{m} x {spec.world_size // m}" for m in spread)
    return Conflict(
        message=f"no online nodes have {shapes} (nodes x devices) {what}",
        field="count",
        code="not_enough_devices",
        extra={"count": spec.world_size, "node_counts": list(spread)},
    )
