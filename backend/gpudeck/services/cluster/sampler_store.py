"""The database side of the telemetry sampler (`telemetry.sampler.SamplerStore`): the live
placements the simulated provider reads, and the device inventory it keeps current."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import transaction
from gpudeck.services.cluster.inventory import upsert_inventory
from gpudeck.services.cluster.telemetry import live_placements, raise_peaks, raise_rank_peaks
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.provider import Placement
from gpudeck.telemetry.schema import Source


class DatabaseSamplerStore:
    def __init__(self, sessions: sessionmaker[Session], address: str | None = None) -> None:
        self.sessions = sessions
        self.address = address  # the node's advertised address, shown with it

    def placements(self, node: str) -> Mapping[str, Placement]:
        with self.sessions() as session:
            return live_placements(session, node)

    def save_inventory(self, node: str, source: Source, devices: Sequence[DeviceInfo]) -> None:
        with transaction(self.sessions) as session:
            upsert_inventory(session, node, source, devices, address=self.address)

    def record_peaks(self, peaks: Mapping[int, int]) -> None:
        with transaction(self.sessions) as session:
            raise_peaks(session, peaks)

    def record_rank_peaks(self, peaks: Mapping[tuple[int, int], int]) -> None:
        with transaction(self.sessions) as session:
            raise_rank_peaks(session, peaks)
