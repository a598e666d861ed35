"""The scheduler's periodic duties. A duty is a name, an interval and a function of the
scheduler's context; add one to `default_duties`. A duty marked `on_wake` also runs at once when
the scheduler is woken (a job ended, a job waits): the queue pass."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import transaction
from gpudeck.scheduler.contact import Contact
from gpudeck.scheduler.slurm_pass import SlurmExecutor
from gpudeck.services.executors.clusters import SlurmClients
from gpudeck.services.placement.live_memory import live_memory_or_none
from gpudeck.services.queue import dispatch, passes
from gpudeck.services.queue import summary as queue_summary
from gpudeck.services.queue import waiting as queue_waiting
from gpudeck.services.runs import multinode, reaper
from gpudeck.services.sweeps import early_stop
from gpudeck.worker.events import expire_stream, publish_status

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Context:
    settings: Settings
    sessions: sessionmaker[Session]
    redis: redis.Redis
    contact: Contact
    celery: Celery
    # monotonic time of the last explained pass (its summary feeds the submit answers)
    explained_at: list[float] = field(default_factory=lambda: [-math.inf])
    # the waiting jobs as the last pass read them: a pass re-reads only changed rows
    waiting: queue_waiting.WaitingCache = field(default_factory=queue_waiting.WaitingCache)
    # sweeps' metric curves as early stopping last read them: a look reads only new rows
    curves: early_stop.CurveCache = field(default_factory=early_stop.CurveCache)


@dataclass(frozen=True)
class Duty:
    name: str
    interval_s: float
    run: Callable[[Context], object]
    on_wake: bool = False
    stop: Callable[[], object] | None = None  # when the scheduler stops (a duty's own thread)


def reap_lost_jobs(ctx: Context) -> list[int]:
    """Jobs whose worker stopped heartbeating for a lease are `lost`; their devices are freed.

    Only after a full lease of unbroken database contact: after an outage, workers need one
    lease to heartbeat again, and their silence during it is the database's fault, not theirs."""
    lease_s = ctx.settings.heartbeat_lease_s
    if ctx.contact.unbroken_s() < lease_s:
        return []
    sent_at = time.monotonic()

    def still_in_contact() -> bool:
        return time.monotonic() - sent_at <= ctx.contact.max_gap_s

    with transaction(ctx.sessions) as session:
        reaped = reaper.reap_lost(session, lease_s, still_in_contact=still_in_contact)
        # Parts of ended jobs across nodes whose node neither confirmed nor renewed its lease.
        silent = multinode.release_silent_parts(session, lease_s) if still_in_contact() else []
    for job_id, node in silent:
        log.warning("job %s: node %s released after its lease, unconfirmed", job_id, node)
    for job_id in reaped:
        log.warning("job %s lost: no heartbeat for %g s", job_id, lease_s)
        publish_status(ctx.redis, job_id, "lost", error="its worker stopped heartbeating")
        expire_stream(ctx.redis, job_id)
    return reaped


def redispatch_jobs(ctx: Context) -> list[int]:
    """The outbox: queued jobs whose dispatch the broker never took (Redis was down when they
    were submitted, or the message was lost) are sent again; a worker's claim makes a second
    delivery harmless."""
    with transaction(ctx.sessions) as session:
        sent = dispatch.redispatch_pending(session, ctx.celery)
    if sent:
        log.info("re-dispatched jobs %s", ", ".join(map(str, sent)))
    return sent


def schedule_queue(ctx: Context) -> list[int]:
    """One pass over the queue (services.queue.plan): cancel jobs whose dependency failed,
    place the jobs that may start (the allocation insert decides every race), dispatch them.
    Returns the ids started.

    A pass only decides (no expected starts past the first blocked job: fast with a long
    queue), except once per interval, when it also explains and publishes the summary the
    submit answers read (services.queue.summary)."""
    live = live_memory_or_none(ctx.redis)
    explain = time.monotonic() - ctx.explained_at[0] >= ctx.settings.scheduler_interval_s
    with transaction(ctx.sessions) as session:
        half_life_s = ctx.settings.fair_share_half_life_s
        decided, summary = queue_summary.compute(
            session, live, half_life_s=half_life_s, explain=explain, cache=ctx.waiting
        )
    if explain:
        ctx.explained_at[0] = time.monotonic()
        try:
            queue_summary.publish(ctx.redis, summary)  # the submit answer's view of the queue
        except redis.RedisError as exc:
            log.warning("could not publish the queue summary: %s", exc)
    for job_id, reason in decided.cancels:
        with transaction(ctx.sessions) as session:
            cancelled = passes.cancel_waiting(session, job_id, reason)
        if cancelled:
            log.info("job %s cancelled: %s", job_id, reason)
            publish_status(ctx.redis, job_id, "cancelled", error=reason)
    for victim_id, for_job_id in decided.preempts:
        with transaction(ctx.sessions) as session:
            asked = passes.preempt(session, victim_id, for_job_id)
        if asked:
            log.info("job %s preempted for job %s", victim_id, for_job_id)
    started = []
    for decision in decided.starts:
        with transaction(ctx.sessions) as session:
            placed = passes.start(session, decision)
        if not placed:
            continue
        started.append(decision.job_id)
        with transaction(ctx.sessions) as session:
            dispatch.dispatch_placed(session, ctx.celery, decision.job_id)
    if started:
        log.info("started queued jobs %s", ", ".join(map(str, started)))
    return started


def stop_hopeless_members(ctx: Context) -> list[int]:
    """Sweeps' early stopping (services/sweeps/early_stop.py): the members to stop are cancelled
    with
    their reason; their workers stop them with a final checkpoint."""
    with transaction(ctx.sessions) as session:
        stops = early_stop.stop_hopeless(session, ctx.curves)
    for stop in stops:
        log.info("job %s: %s", stop.job_id, stop.reason)
    return [s.job_id for s in stops]


def default_duties(settings: Settings) -> list[Duty]:
    slurm = SlurmExecutor(clients=SlurmClients.under(settings.data_dir))
    return [
        Duty("reap lost jobs", max(0.5, settings.heartbeat_interval_s / 2), reap_lost_jobs),
        Duty("re-dispatch queued jobs", 1.0, redispatch_jobs),
        Duty("stop hopeless sweep members", 1.0, stop_hopeless_members),
        Duty("schedule the queue", settings.scheduler_interval_s, schedule_queue, on_wake=True),
        Duty("follow the Slurm clusters", settings.slurm_poll_s, slurm.kick, stop=slurm.join),
    ]
