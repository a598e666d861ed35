"""Hand a committed job to its node's worker. Called only after the job row is committed."""

from __future__ import annotations

import logging

from celery import Celery

from gpudeck.core.celery_app import RUN_JOB_TASK, node_queue

log = logging.getLogger(__name__)


def dispatch_job(celery: Celery, job_id: int, node: str) -> bool:
    """Send run_job_task by name (the API never imports the worker's code).

    A broker outage must not turn a committed job into a 500: the job stays queued and the
    node's worker picks up queued jobs when it starts (see tasks.jobs).
    """
    try:
        celery.send_task(RUN_JOB_TASK, args=[job_id], queue=node_queue(node))
    except Exception:
        log.exception("could not dispatch job %s to node %s; it stays queued", job_id, node)
        return False
    return True
