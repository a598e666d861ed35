"""The Celery application. One queue per node: a job runs on the node that holds its GPUs."""

from __future__ import annotations

from celery import Celery

from gpudeck.core.config import Settings
from gpudeck.core.redis import celery_broker_url

RUN_JOB_TASK = "gpudeck.run_job"


def node_queue(node: str) -> str:
    return f"gpudeck.node.{node}"


def make_celery(settings: Settings) -> Celery:
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
    return app
