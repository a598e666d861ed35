"""Simulated devices for machines without NVIDIA GPUs: a configured set, clearly labelled."""

from __future__ import annotations

import uuid

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.services.inventory import DeviceInfo

SOURCE = "simulated"
_NAMESPACE = uuid.UUID("6f1c2a8e-3a43-4e0e-9d59-2b7c6c1f0a11")


def simulated_uuid(node: str, index: int) -> str:
    """Stable across restarts, distinct across nodes, and never mistaken for a real GPU's."""
    return f"SIM-{uuid.uuid5(_NAMESPACE, f'{node}/{index}')}"


def simulated_inventory(spec: SimulatedDeviceSpec, node: str) -> list[DeviceInfo]:
    return [
        DeviceInfo(
            uuid=simulated_uuid(node, i),
            index=i,
            name=spec.name,
            memory_total_bytes=spec.memory_total_bytes,
        )
        for i in range(spec.count)
    ]
