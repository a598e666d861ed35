"""SQLAlchemy tables only. Pydantic request/response models live in gpudeck.schemas."""

from gpudeck.models.allocation import Allocation
from gpudeck.models.cluster import Cluster
from gpudeck.models.device import Device, Node, NodeToken
from gpudeck.models.job import Checkpoint, Job, JobMetric, JobStatus
from gpudeck.models.job_log import JobLogChunk
from gpudeck.models.job_node import JobNode
from gpudeck.models.job_run import JobRun
from gpudeck.models.quota import UserQuota
from gpudeck.models.sweep import Sweep
from gpudeck.models.user import ApiToken, AuditEvent, User

__all__ = [
    "Allocation",
    "ApiToken",
    "AuditEvent",
    "Checkpoint",
    "Cluster",
    "Device",
    "Job",
    "JobLogChunk",
    "JobMetric",
    "JobNode",
    "JobRun",
    "JobStatus",
    "Node",
    "NodeToken",
    "Sweep",
    "User",
    "UserQuota",
]
