"""gpudeck/tasks/jobs: the run task is registered under the name the dispatch sends."""

from __future__ import annotations

from gpudeck.core.celery_app import RUN_JOB_TASK


def test_run_job_task_is_registered_under_the_dispatched_name() -> None:
    from gpudeck.tasks.jobs import run_job_task

    assert run_job_task.name == RUN_JOB_TASK
