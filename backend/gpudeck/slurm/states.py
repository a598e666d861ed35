"""Slurm's job states and pending reasons in GPUDeck's words.

The words are GPUDeck's job statuses (models.JobStatus; a test keeps the two in step) plus
`unknown`: what a poll says when Slurm did not answer, so that silence is never read as failure.
The reason codes are GPUDeck's queue reason codes (schemas.jobs.ReasonCode) plus `cluster`, for
what only a cluster has (a partition down, nodes unavailable, a begin time, a reservation).
"""

from __future__ import annotations

from typing import Literal

State = Literal[
    "queued", "starting", "running", "succeeded", "failed", "cancelled", "timeout", "unknown"
]
ReasonCode = Literal["devices_busy", "priority", "quota", "dependency", "held", "sweep", "cluster"]

_STATES: dict[str, State] = {
    "PENDING": "queued",
    "REQUEUED": "queued",  # requeued (preemption, `scontrol requeue`): it will run again
    "REQUEUE_FED": "queued",
    "REQUEUE_HOLD": "queued",
    "RESV_DEL_HOLD": "queued",
    "SPECIAL_EXIT": "queued",  # held for requeue after a special exit code
    "CONFIGURING": "starting",  # allocated, nodes being readied
    "RUNNING": "running",
    "COMPLETING": "running",  # its processes are ending; the final state is not known yet
    "SIGNALING": "running",
    "STAGE_OUT": "running",
    "RESIZING": "running",
    "SUSPENDED": "running",
    "STOPPED": "running",
    "COMPLETED": "succeeded",
    "FAILED": "failed",
    "NODE_FAIL": "failed",
    "BOOT_FAIL": "failed",
    "OUT_OF_MEMORY": "failed",
    "DEADLINE": "failed",
    "REVOKED": "failed",  # a federation sibling ran it instead
    "PREEMPTED": "failed",  # preempted and not requeued (a requeued one reads REQUEUED)
    "CANCELLED": "cancelled",
    "TIMEOUT": "timeout",
}

TERMINAL: frozenset[State] = frozenset({"succeeded", "failed", "cancelled", "timeout"})

# Pending reasons as squeue's %r and sacct's Reason print them.
_REASONS: dict[str, tuple[ReasonCode, str]] = {
    "Resources": ("devices_busy", "waiting for the GPUs and nodes it asks for to be free"),
    "Priority": ("priority", "jobs of higher priority are ahead of it on the cluster"),
    "Dependency": ("dependency", "waiting for the job it depends on to end"),
    "DependencyNeverSatisfied": (
        "dependency",
        "the job it depends on ended in a way it cannot use",
    ),
    "JobArrayTaskLimit": ("sweep", "as many members run as the sweep's max_parallel allows"),
    "JobHeldUser": ("held", "held: release it to let it start"),
    "JobHeldAdmin": ("held", "held by a cluster administrator"),
    "BeginTime": ("cluster", "its begin time has not come yet"),
    "ReqNodeNotAvail": ("cluster", "a node it needs is down, drained or reserved"),
    "NodeDown": ("cluster", "a node it needs is down"),
    "PartitionDown": ("cluster", "its partition is down"),
    "PartitionInactive": ("cluster", "its partition is inactive"),
    "PartitionNodeLimit": ("cluster", "it asks for more nodes than its partition allows"),
    "PartitionTimeLimit": ("cluster", "its time limit is over its partition's"),
    "Reservation": ("cluster", "waiting for its reservation to start"),
    "Licenses": ("cluster", "waiting for a license"),
    "BadConstraints": ("cluster", "no node has the features it asks for"),
}
# Account and QOS limits: Assoc* and QOS* reasons, dozens of them (AssocGrpGRES,
# QOSMaxGRESPerUser, ...), all "a limit of the cluster's accounting" to a GPUDeck user.
_QUOTA_PREFIXES = ("Assoc", "QOS", "MaxGRES", "MaxCpu", "MaxJob", "MaxMem", "MaxNode")


def state_of(slurm_state: str) -> State | None:
    """GPUDeck's word for a Slurm state (sacct's "CANCELLED by 0" included); None if unknown."""
    return _STATES.get(slurm_state.split(" ", 1)[0].rstrip("+"))


def reason_of(slurm_reason: str) -> tuple[ReasonCode, str] | None:
    """A pending job's reason as GPUDeck's code and sentence; None where Slurm gives none."""
    if slurm_reason in ("", "None", "(null)"):
        return None
    if slurm_reason in _REASONS:
        return _REASONS[slurm_reason]
    if slurm_reason.startswith(_QUOTA_PREFIXES):
        return "quota", f"a limit of its Slurm account or QOS ({slurm_reason})"
    return "cluster", f"Slurm says {slurm_reason}"
