"""Celery tasks for jobs: ids in, the worker runtime does the work."""

from __future__ import annotations

from celery import shared_task

from gpudeck.core.celery_app import RUN_JOB_TASK
from gpudeck.worker import runtime


# No retries: a job is claimed once (queued -> starting); a failure is recorded on the job,
# and a lost worker is the reaper's to notice.
@shared_task(name=RUN_JOB_TASK, ignore_result=True, acks_late=False)
def run_job_task(job_id: int) -> None:
    """Claim a queued job of this node, run its ranks to the end, record the outcome."""
    runtime.current().run_job(int(job_id))
