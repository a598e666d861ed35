"""SQLAlchemy tables only. Pydantic request/response models live in gpudeck.schemas."""

from gpudeck.models.allocation import Allocation
from gpudeck.models.device import Device, Node
from gpudeck.models.job import Checkpoint, Job, JobMetric, JobStatus
from gpudeck.models.user import ApiToken, AuditEvent, User

__all__ = [
    "Allocation",
    "ApiToken",
    "AuditEvent",
    "Checkpoint",
    "Device",
    "Job",
    "JobMetric",
    "JobStatus",
    "Node",
    "User",
]
