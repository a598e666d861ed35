"""slurmctld silent or gone: a poll says unknown with the cause, never failed, and reads right
once it is back.

Each test waits for its job's own command to run, not only for Slurm's RUNNING, before it takes
the controller away. RUNNING comes when the batch script starts; the script's srun then asks
slurmctld to confirm the allocation and create the step, and gives up after a few seconds
without it ("srun: error: Unable to confirm allocation for job 3: Unable to contact slurm
controller"): the job then really fails. Waiting for RUNNING alone, a loaded machine (two busy
loops on two cores) took slurmctld down 70 ms after the allocation, before srun had started, in
4 runs of 12; with the wait, 20 runs of 20 passed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from slurm.cluster import SlurmCluster
from slurm.helpers import ended, gate, wait_for

from gpudeck.slurm import BatchSpec, SlurmClient, render


def test_a_paused_controller_reads_unknown_then_right_after(
    slurm: SlurmClient,
    slurm_cluster: SlurmCluster,
    spec_for: Callable[..., BatchSpec],
    tmp_path: Path,
) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    finished = slurm.submit(render(spec_for(["true"])))
    running = slurm.submit(render(spec_for(["sh", "-c", gate(release, started)])))
    wait_for(slurm, [finished, running], lambda s: s[running].state == "running" and
             started.exists() and s[finished].state == "succeeded")  # fmt: skip

    slurm_cluster.pause_controller()  # SIGSTOP: connections open, no answer
    try:
        states = slurm.poll([finished, running])
    finally:
        slurm_cluster.resume_controller()
    release.touch()

    assert states[running].state == "unknown"
    assert "slurmctld did not answer" in (states[running].reason or "")
    assert states[finished].state == "succeeded"  # slurmdbd held its end
    after = wait_for(slurm, [finished, running], ended)
    assert {s.state for s in after.values()} == {"succeeded"}


def test_a_stopped_controller_reads_unknown_and_its_jobs_survive_a_restart(
    slurm: SlurmClient,
    slurm_cluster: SlurmCluster,
    spec_for: Callable[..., BatchSpec],
    tmp_path: Path,
) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    job = slurm.submit(render(spec_for(["sh", "-c", gate(release, started)])))
    wait_for(slurm, [job], lambda s: s[job].state == "running" and started.exists())

    slurm_cluster.stop_controller()
    try:
        state = slurm.poll([job])[job]
    finally:
        slurm_cluster.start_controller()

    assert state.state == "unknown"
    assert "slurmctld did not answer" in (state.reason or "")
    assert wait_for(slurm, [job], lambda s: s[job].state != "unknown")[job].state == "running"
    release.touch()
    assert wait_for(slurm, [job], ended)[job].state == "succeeded"
