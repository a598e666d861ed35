"""This node's device inventory from the configured provider (NVML, or simulated)."""

from __future__ import annotations

from gpudeck.core.config import Settings
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.factory import make_provider


def local_inventory(settings: Settings) -> tuple[str, list[DeviceInfo]]:
    provider = make_provider(settings)
    try:
        return provider.source, provider.inventory()
    finally:
        provider.close()
