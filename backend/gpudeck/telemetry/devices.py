"""What a provider reports about each device it can see: the node's inventory, as stored in
the `devices` table by the sampler's entry point (telemetry itself knows no database)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DeviceInfo:
    uuid: str
    index: int
    name: str
    memory_total_bytes: int
    external_processes: list[dict[str, int]] = field(default_factory=list)
