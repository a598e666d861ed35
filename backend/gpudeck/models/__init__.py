"""SQLAlchemy tables only. Pydantic request/response models live in gpudeck.schemas."""

from gpudeck.models.allocation import Allocation
from gpudeck.models.device import Device, Node
from gpudeck.models.job import Checkpoint, Job, JobMetric, JobStatus

__all__ = ["Allocation", "Checkpoint", "Device", "Job", "JobMetric", "JobStatus", "Node"]
