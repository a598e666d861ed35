"""`gpudeck worker`: this node's Celery worker (queue `gpudeck.node.<node>`), with its warm
launcher and heartbeat thread."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpudeck.cli.settings import load_service_settings

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("gpudeck.worker")
DEFAULT_CONCURRENCY = 64  # job runner threads; each job's ranks are separate processes


def _pick_up_queued(celery: Celery) -> None:
    """Queued jobs whose dispatch was lost (broker down, worker down) are sent again; a job
    already claimed ignores the duplicate."""
    from gpudeck.core.celery_app import RUN_JOB_TASK, node_queue
    from gpudeck.worker import runtime

    node = runtime.current().settings.node_name
    for job_id in runtime.current().queued_job_ids():
        log.info("picking up queued job %s", job_id)
        celery.send_task(RUN_JOB_TASK, args=[job_id], queue=node_queue(node))


def worker(
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="jobs run at once")] = (
        DEFAULT_CONCURRENCY
    ),
) -> None:
    """Run this node's worker: it starts jobs' ranks and heartbeats them."""
    settings = load_service_settings("worker")
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    from celery import signals

    import gpudeck.tasks.jobs  # noqa: F401  (registers run_job_task)
    from gpudeck.core.celery_app import make_celery, node_queue
    from gpudeck.worker import runtime

    celery = make_celery(settings)
    worker_runtime = runtime.WorkerRuntime(settings)
    runtime.install(worker_runtime)
    worker_runtime.start()

    def on_ready(**_: Any) -> None:
        _pick_up_queued(celery)

    def on_shutdown(**_: Any) -> None:
        worker_runtime.begin_shutdown()

    signals.worker_ready.connect(on_ready, weak=False)
    signals.worker_shutting_down.connect(on_shutdown, weak=False)
    try:
        celery.worker_main(
            [
                *(["--quiet"] if settings.log_level in ("warning", "error") else []),  # no banner
                "worker",
                "--pool=threads",
                f"--concurrency={concurrency}",
                f"--queues={node_queue(settings.node_name)}",
                f"--hostname=gpudeck@{settings.node_name}",
                f"--loglevel={settings.log_level.upper()}",
                "--without-gossip",
                "--without-mingle",
            ]
        )
    finally:
        worker_runtime.close()
        runtime.install(None)


def register(app: typer.Typer) -> None:
    app.command()(worker)
