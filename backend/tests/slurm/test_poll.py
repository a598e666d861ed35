"""Polling many jobs costs the cluster one squeue and one sacct, and reads each job right."""

from __future__ import annotations

from collections.abc import Callable

from slurm.conftest import CountingRunner
from slurm.helpers import ended, wait_for

from gpudeck.slurm import ArraySpec, BatchSpec, SlurmClient, render

HELD_TASKS = 1000


def test_a_thousand_and_more_jobs_are_polled_with_one_squeue_and_one_sacct(
    slurm: SlurmClient, runner: CountingRunner, spec_for: Callable[..., BatchSpec]
) -> None:
    # Ended jobs (sacct's) beside a held array of a thousand tasks (squeue's): one poll.
    done = [slurm.submit(render(spec_for(["true"]))) for _ in range(10)]
    failing = slurm.submit(render(spec_for(["sh", "-c", "exit 3"])))
    wait_for(slurm, [*done, failing], ended)
    array = slurm.submit(
        render(spec_for(["true"], held=True, array=ArraySpec(count=HELD_TASKS, max_parallel=8)))
    )
    try:
        runner.calls.clear()
        states = slurm.poll([*done, failing, array])

        assert runner.calls == {"squeue": 1, "sacct": 1}
        assert len(states) == len(done) + 1 + HELD_TASKS
        assert {states[j].state for j in done} == {"succeeded"}
        assert (states[failing].state, states[failing].exit_code) == ("failed", 3)
        tasks = [states[f"{array}_{k}"] for k in range(HELD_TASKS)]
        assert {(t.state, t.reason_code) for t in tasks} == {("queued", "held")}
    finally:
        slurm.cancel(array)


def test_a_job_gone_from_squeue_is_read_from_sacct(
    slurm: SlurmClient, runner: CountingRunner, spec_for: Callable[..., BatchSpec]
) -> None:
    job = slurm.submit(render(spec_for(["true"])))

    def gone_from_squeue(_: object) -> bool:
        argv = ["squeue", "--noheader", "--states=all", "--format=%i", f"--jobs={job}"]
        listed = slurm.run(argv, timeout_s=20)
        return "Invalid job id" in listed.stderr or job not in listed.stdout.split()

    wait_for(slurm, [job], ended)
    # MinJobAge=2: slurmctld forgets the ended job at its next purge (every 10 s here).
    wait_for(slurm, [job], gone_from_squeue, timeout_s=40)
    runner.calls.clear()
    state = slurm.poll([job])[job]

    assert (state.state, state.source, state.exit_code) == ("succeeded", "sacct", 0)
    assert runner.calls == {"squeue": 1, "sacct": 1}


def test_a_running_job_costs_no_sacct(
    slurm: SlurmClient, runner: CountingRunner, spec_for: Callable[..., BatchSpec]
) -> None:
    job = slurm.submit(render(spec_for(["sleep", "30"])))
    try:
        wait_for(slurm, [job], lambda s: s[job].state == "running")
        runner.calls.clear()
        assert slurm.poll([job])[job].source == "squeue"
        assert runner.calls == {"squeue": 1}
    finally:
        slurm.cancel(job)
