"""Domain errors. Services raise these; one handler in the API maps them to HTTP responses
whose body names the field and the reason."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class DomainError(Exception):
    message: str
    field: str | None = None
    status_code: int = 400
    code: str = "bad_request"
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


@dataclass
class BusyDevice:
    node: str
    uuid: str
    index: int
    held_by_job_id: int | None
    reason: str  # "held_by_job" | "external_process"


class GpuBusy(DomainError):
    def __init__(self, busy: list[BusyDevice]) -> None:
        names = ", ".join(
            f"{d.node}/{d.index} (job {d.held_by_job_id})"
            if d.held_by_job_id is not None
            else f"{d.node}/{d.index} (external process)"
            for d in busy
        )
        super().__init__(
            message=f"devices busy: {names}",
            field="devices",
            status_code=409,
            code="gpu_busy",
            extra={"busy": [d.__dict__ for d in busy]},
        )


class NotEnoughDevices(DomainError):
    def __init__(self, requested: int, free: int, node: str | None) -> None:
        where = f" on node {node}" if node else ""
        super().__init__(
            message=f"{requested} devices requested but only {free} are free{where}",
            field="count",
            status_code=409,
            code="not_enough_devices",
            extra={"requested": requested, "free": free},
        )


class UnknownDevice(DomainError):
    def __init__(self, field_path: str, node: str, ident: str) -> None:
        super().__init__(
            message=f"no device {ident} on node {node!r}",
            field=field_path,
            status_code=422,
            code="unknown_device",
        )


class JobNotFound(DomainError):
    def __init__(self, job_id: int) -> None:
        super().__init__(
            message=f"job {job_id} does not exist",
            field="job_id",
            status_code=404,
            code="job_not_found",
        )


class InvalidTransition(DomainError):
    def __init__(self, job_id: int, current: str, target: str) -> None:
        super().__init__(
            message=f"job {job_id} is {current}; it cannot become {target}",
            field="status",
            status_code=409,
            code="invalid_transition",
            extra={"current": current, "target": target},
        )


class InvalidInput(DomainError):
    """A request that passed the schema but not the domain rules (unknown kind, bad config...).

    `errors` are (field path, reason) pairs, shown in FastAPI's 422 format so clients parse one
    shape for every validation failure."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__(
            message="; ".join(f"{f}: {m}" for f, m in errors),
            field=errors[0][0] if errors else None,
            status_code=422,
            code="invalid_input",
            extra={"errors": errors},
        )
