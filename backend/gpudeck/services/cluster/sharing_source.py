"""The database side of sharing for the node's sampler (`telemetry.sampler.SharingSource`):
which jobs share this node's devices and what each reserved, from the live shared allocations.
Read every sample: a job placed or ended is held to its reservation, or let go, within one."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import Allocation, Job
from gpudeck.telemetry.provider import Placement

# (device uuid, rank, job id, job status, reserved bytes) of each live shared allocation.
_Row = tuple[str, int, int, str, int]


def shared_rows(session: Session, node: str) -> list[_Row]:
    rows = session.execute(
        select(Allocation.gpu_uuid, Allocation.rank, Job.id, Job.status, Allocation.reserved_bytes)
        .join(Job, Job.id == Allocation.job_id)
        .where(
            Allocation.node == node,
            Allocation.released_at.is_(None),
            Allocation.reserved_bytes.is_not(None),
        )
        .order_by(Allocation.gpu_uuid, Job.id)
    )
    return [(uuid, rank, job, status, reserved or 0) for uuid, rank, job, status, reserved in rows]


class DatabaseSharingSource:
    """One query a sample: `reservations` reads the rows, and `shared_placements`, which the
    sampler asks right after it in the same sample, answers from that read."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._rows: dict[str, list[_Row]] = {}

    def reservations(self, node: str) -> Mapping[int, int]:
        with self.sessions() as session:
            rows = self._rows[node] = shared_rows(session, node)
        return {job: reserved for _, _, job, _, reserved in rows}

    def shared_placements(self, node: str) -> Mapping[str, Sequence[Placement]]:
        rows = self._rows.get(node)
        if rows is None:
            self.reservations(node)
            rows = self._rows[node]
        placed: dict[str, list[Placement]] = defaultdict(list)
        for uuid, rank, job, status, reserved in rows:
            placed[uuid].append(Placement(job, rank, status, reserved))
        return dict(placed)
