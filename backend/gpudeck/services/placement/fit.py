"""Requests that can never run on their node, refused with what is wrong before anything else:
more devices than the node has, or a job bigger than the node's largest device even when idle.
(Whether devices are free *now* is the reservation's question, not this module's.)"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Device
from gpudeck.services.errors import InvalidInput
from gpudeck.services.placement.recommend import usable_when_idle

GiB = 1024**3


def node_devices(session: Session, node: str) -> Sequence[Device]:
    return session.scalars(select(Device).where(Device.node == node).order_by(Device.index)).all()


def check_count(devices: Sequence[Device], node: str, count: int) -> None:
    """A job runs on one node: asking for more devices than it has can never be met."""
    if count > len(devices):
        raise InvalidInput(
            [("count", f"node {node} has {len(devices)} devices; {count} requested (a job "
              "runs on one node)")]
        )  # fmt: skip


def check_fits(devices: Sequence[Device], bytes_per_device: int, field: str) -> None:
    """Refuse a job whose per-device estimate exceeds the largest device of `devices` (taken
    whole, less the safety margin), saying by how much."""
    if not devices:
        return
    largest = max(devices, key=lambda d: usable_when_idle(d.memory_total_bytes))
    room = usable_when_idle(largest.memory_total_bytes)
    if bytes_per_device <= room:
        return
    over = bytes_per_device - room
    raise InvalidInput(
        [(field, f"does not fit: the job needs {bytes_per_device / GiB:.2f} GiB per device, "
          f"{over / GiB:.2f} GiB more than the {room / GiB:.2f} GiB that "
          f"{largest.node}/{largest.index} (the largest device) can give it, idle; make the "
          "job smaller (batch size, widths)")]
    )  # fmt: skip
