"""Domain errors: what went wrong, in the domain's words, with the field it concerns.

Each error is one of a few categories (the request is invalid, names something missing,
conflicts with the current state, is not allowed, or is too large). Services raise them and
know no HTTP: api/errors.py is the one place that maps a category to a status code."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class DomainError(Exception):
    message: str
    field: str | None = None
    code: str = "bad_request"
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


class Invalid(DomainError):
    """The request breaks a rule of the domain (beyond its schema)."""


class NotFound(DomainError):
    """The request names something that does not exist."""


class Conflict(DomainError):
    """The request is valid but the current state refuses it (busy devices, a finished job)."""


class Forbidden(DomainError):
    """The caller may not do this."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message=message, field=field, code="forbidden")


class NotAuthenticated(Forbidden):
    """The caller is nobody: no valid token."""

    def __init__(self) -> None:
        super().__init__("a valid API token is required")
        self.code = "not_authenticated"


class TooLarge(DomainError):
    """The request carries more data than allowed."""


@dataclass
class BusyDevice:
    node: str
    uuid: str
    index: int
    held_by_job_id: int | None
    reason: str  # "held_by_job" | "external_process"


class GpuBusy(Conflict):
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
            code="gpu_busy",
            extra={"busy": [d.__dict__ for d in busy]},
        )


class NotEnoughDevices(Conflict):
    def __init__(
        self, requested: int, free: int, node: str | None, lacking_memory: int = 0
    ) -> None:
        where = f" on node {node}" if node else ""
        # Idle devices without room for the job are not "free" for it: say so, or the message
        # reads as if every device were taken.
        why = (
            f" ({lacking_memory} more are idle but lack the free memory the job needs per device)"
            if lacking_memory
            else ""
        )
        super().__init__(
            message=f"{requested} devices requested but only {free} are free{where}{why}",
            field="count",
            code="not_enough_devices",
            extra={"requested": requested, "free": free, "lacking_memory": lacking_memory},
        )


class UnknownDevice(Invalid):
    def __init__(self, field_path: str, node: str, ident: str) -> None:
        super().__init__(
            message=f"no device {ident} on node {node!r}",
            field=field_path,
            code="unknown_device",
        )


class JobNotFound(NotFound):
    def __init__(self, job_id: int) -> None:
        super().__init__(
            message=f"job {job_id} does not exist",
            field="job_id",
            code="job_not_found",
        )


class InvalidTransition(Conflict):
    def __init__(self, job_id: int, current: str, target: str) -> None:
        super().__init__(
            message=f"job {job_id} is {current}; it cannot become {target}",
            field="status",
            code="invalid_transition",
            extra={"current": current, "target": target},
        )


class InvalidInput(Invalid):
    """A request that passed the schema but not the domain rules (unknown kind, bad config...).

    `errors` are (field path, reason) pairs, shown in FastAPI's 422 format so clients parse one
    shape for every validation failure."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__(
            message="; ".join(f"{f}: {m}" for f, m in errors),
            field=errors[0][0] if errors else None,
            code="invalid_input",
            extra={"errors": errors},
        )


class UnknownKind(NotFound):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            message=f"no job kind {name!r}; known kinds: {', '.join(known)}",
            field="kind_name",
            code="unknown_kind",
        )
