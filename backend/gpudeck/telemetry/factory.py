"""Which device provider this node uses (`device_provider` setting)."""

from __future__ import annotations

import logging

from gpudeck.core.config import Settings
from gpudeck.telemetry import nvml
from gpudeck.telemetry.provider import Provider
from gpudeck.telemetry.simulated import SimulatedProvider

log = logging.getLogger(__name__)


def make_provider(settings: Settings) -> Provider:
    """`auto` is NVML when `nvmlInit` works here, else the simulated device set."""
    choice = settings.device_provider
    if choice in ("auto", "nvml"):
        try:
            return nvml.NvmlProvider()
        except nvml.NvmlUnavailable as exc:
            if choice == "nvml":
                raise
            log.info("NVML unavailable (%s); using simulated devices", exc)
    return SimulatedProvider(settings.simulated, settings.node_name, settings.sample_interval_s)
