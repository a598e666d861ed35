"""The Celery application. One queue per node: a job runs on the node that holds its GPUs."""

from __future__ import annotations

from celery import Celery

from gpudeck.core.config import Settings
from gpudeck.core.redis import celery_broker_url

RUN_JOB_TASK = "gpudeck.run_job"


def node_queue(node: str) -> str:
    return f"gpudeck.node.{node}"


def make_celery(settings: Settings, *, publish_timeout_s: float | None = None) -> Celery:
    """`publish_timeout_s`: the API's bound on sending a task (socket timeouts on the broker
    connection, no retry): a stalled broker is an error within it, and the outbox sends the
    job later (services/queue/dispatch.py). Workers consume with kombu's defaults."""
    if settings.redis_url is None:
        raise RuntimeError("no Redis configured; call core.embedded.ensure_services first")
    broker = celery_broker_url(settings.redis_url)
    app = Celery("gpudeck", broker=broker, backend=None)
    app.conf.update(
        # Ack on receipt: jobs run for hours, longer than Redis's visibility timeout, and a
        # redelivered message would start a second copy. Lost workers are the reaper's job.
        task_acks_late=False,
        worker_prefetch_multiplier=1,
        task_default_queue=node_queue(settings.node_name),
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    if publish_timeout_s is not None:
        app.conf.update(
            broker_connection_timeout=publish_timeout_s,
            broker_connection_retry=False,
            broker_connection_max_retries=0,
            broker_transport_options={
                "socket_timeout": publish_timeout_s,
                "socket_connect_timeout": publish_timeout_s,
            },
        )
    return app
