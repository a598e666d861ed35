"""slurmctld silent or gone: a poll says unknown with the cause, never failed, and reads right
once it is back."""

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
    release = tmp_path / "release"
    finished = slurm.submit(render(spec_for(["true"])))
    running = slurm.submit(render(spec_for(["sh", "-c", gate(release)])))
    wait_for(slurm, [finished, running], lambda s: s[running].state == "running" and
             s[finished].state == "succeeded")  # fmt: skip

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
    release = tmp_path / "release"
    job = slurm.submit(render(spec_for(["sh", "-c", gate(release)])))
    wait_for(slurm, [job], lambda s: s[job].state == "running")

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
