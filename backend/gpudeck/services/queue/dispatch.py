"""Hand a committed job to its node's worker, and record that it was handed (an outbox).

The job row is the truth; the broker message is a notification. `dispatched_at` says when a
message was last sent successfully, so a job accepted while Redis was down, or whose message
Redis lost, is sent again by `redispatch_pending`. Sending twice is harmless: the worker claims
a job only while it is queued, so a second delivery does nothing.
"""

from __future__ import annotations

import logging
from functools import partial

from celery import Celery
from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from gpudeck.core.celery_app import RUN_JOB_TASK, node_queue
from gpudeck.core.redis import Breaker, RedisUnavailable
from gpudeck.models import Job, JobStatus
from gpudeck.services.queue.waiting import has_live_allocation

log = logging.getLogger(__name__)
# A job the API has just committed is about to be dispatched by the API itself.
GRACE_S = 5.0
# A message sent this long ago whose job is still queued is taken as lost and sent again.
RESEND_AFTER_S = 60.0


def dispatch_job(celery: Celery, job_id: int, node: str, breaker: Breaker | None = None) -> bool:
    """Send run_job_task by name (the API never imports the worker's code). False when the
    broker cannot be reached, or did not answer a moment ago (`breaker`, the API's: the send
    is not even tried): the job stays queued and undispatched, for redispatch_pending."""
    send = partial(
        # No retry: the API bounds the send (make_celery's publish timeout); the outbox retries.
        celery.send_task,
        RUN_JOB_TASK,
        args=[job_id],
        queue=node_queue(node),
        retry=breaker is None,
    )
    try:
        if breaker is None:
            send()
        else:
            breaker.call(send, (Exception,))
    except RedisUnavailable:
        log.warning("broker unreachable or slow just now: job %s is left to the outbox", job_id)
        return False
    except Exception:
        log.warning("could not dispatch job %s to node %s; it stays queued", job_id, node)
        return False
    return True


def dispatch_to_nodes(celery: Celery, job: Job, breaker: Breaker | None = None) -> bool:
    """Send the run task to every node the job holds devices on (one for most jobs); each
    node's worker starts its own ranks. False at the first node the broker did not take."""
    nodes = list(dict.fromkeys(a.node for a in job.allocations if a.released_at is None))
    return all(dispatch_job(celery, job.id, node, breaker) for node in nodes or [job.node])


def dispatch_placed(session: Session, celery: Celery, job_id: int) -> None:
    """The submit path's dispatch, for a job the scheduler has just placed: to every node it
    now holds devices on (a job across nodes is claimed by its first node and joined by the
    others). Unmarked when a broker refused it: the outbox sends it again."""
    job = session.get(Job, job_id)
    if job is not None and dispatch_to_nodes(celery, job):
        mark_dispatched(session, job_id)


def mark_dispatched(session: Session, job_id: int) -> None:
    """Record the send, without waiting for the job's row: a worker that holds it is claiming
    the job, so the message reached it and the mark is moot (were the claim undone, the job
    is queued, unmarked, and the outbox sends it again: harmless). Waiting there once turned a
    submit the worker was already starting into a 503 (the API's statement timeout), which
    invites the client to submit the job twice."""
    free = select(Job.id).where(Job.id == job_id).with_for_update(skip_locked=True)
    session.execute(
        update(Job).where(Job.id == free.scalar_subquery()).values(dispatched_at=func.now())
    )
    session.flush()


def redispatch_pending(
    session: Session,
    celery: Celery,
    *,
    grace_s: float = GRACE_S,
    resend_after_s: float = RESEND_AFTER_S,
    limit: int = 500,
) -> list[int]:
    """Send again every queued job never dispatched (older than `grace_s`) or dispatched more
    than `resend_after_s` ago; returns the ids sent. Rows are locked SKIP LOCKED, so two
    callers never send the same job at once. Stops at the first broker failure (the rest
    wait for the next call). The caller commits."""
    now = func.now()
    rows = session.scalars(
        select(Job)
        .where(
            Job.status == JobStatus.queued,
            has_live_allocation(),  # a waiting job is the scheduler's to place first
            or_(
                Job.dispatched_at.is_(None)
                & (Job.created_at < now - func.make_interval(0, 0, 0, 0, 0, 0, grace_s)),
                Job.dispatched_at < now - func.make_interval(0, 0, 0, 0, 0, 0, resend_after_s),
            ),
        )
        .order_by(Job.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    sent = []
    for job in rows:
        if not dispatch_to_nodes(celery, job):
            break
        mark_dispatched(session, job.id)
        sent.append(job.id)
    if sent:
        log.info("re-dispatched queued jobs %s", sent)
    return sent
