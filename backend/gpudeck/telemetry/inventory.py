"""This node's device inventory from the configured provider."""

from __future__ import annotations

from gpudeck.core.config import Settings
from gpudeck.services.inventory import DeviceInfo
from gpudeck.telemetry import simulated


def local_inventory(settings: Settings) -> tuple[str, list[DeviceInfo]]:
    # The NVML provider joins here with the telemetry work; until then every node is simulated.
    return simulated.SOURCE, simulated.simulated_inventory(settings.simulated, settings.node_name)
