"""The submit check of a job that asks to share its devices by memory (`share: "memory"`), and
the reservation it will hold on each device: its estimate plus a CUDA context reserve.

Refused (422, naming `share`): a job without an estimate (it could not be held to a share it
cannot name), a count spread over several nodes (not packed yet), a job whose nodes none allow
sharing, and a reservation no device could hold even idle."""

from __future__ import annotations

from sqlalchemy.orm import Session

from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.errors import InvalidInput
from gpudeck.services.placement.fit import check_fits
from gpudeck.services.placement.packing import share_reservation_bytes
from gpudeck.services.placement.shared import sharing_nodes
from gpudeck.services.submit.placement_request import Placement


def reservation_bytes(
    session: Session,
    spec: JobCreate,
    placement: Placement,
    estimate: int | None,
    context_reserve_bytes: int,
) -> int | None:
    """The bytes a sharing job reserves on each device (None: it takes whole devices)."""
    if spec.share != "memory":
        return None
    if estimate is None:
        raise InvalidInput(
            [("share", f"kind {spec.kind} gives no memory estimate for this config: a job "
              "that shares a device must name its share (use exclusive)")]
        )  # fmt: skip
    if spec.nodes is not None or spec.devices_per_node is not None:
        raise InvalidInput([("share", "a count spread over nodes cannot share devices yet")])
    nodes = sorted({d.node for d in placement.inventory} or {placement.node})
    allowed = [n for n, (on, _) in sharing_nodes(session, nodes).items() if on]
    if not allowed:
        names = ", ".join(nodes)
        raise InvalidInput(
            [("share", f"node {names} does not allow sharing devices (an admin turns it on: "
              f"gpudeck nodes sharing {nodes[0]} --on)")]
        )  # fmt: skip
    need = share_reservation_bytes(estimate, context_reserve_bytes)
    check_fits([d for d in placement.inventory if d.node in allowed], need, "share")
    return need
