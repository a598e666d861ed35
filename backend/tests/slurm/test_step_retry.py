"""The batch script starts srun again while no rank has started (slurmctld unreachable right
after the allocation), never a rank that ran, and stops at its bound or at USR1.

Each test holds or breaks the step on purpose, so nothing here depends on timing: the outage
test lets each srun start only on its cue (a shell function named srun in front of the real
one): the first once slurmctld is stopped, the second once the script said the first failed
and slurmctld is back; the others point srun at a job id Slurm does not have (SLURM_JOB_ID),
which fails the same way at once ("Unable to confirm allocation"), the controller up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from slurm.cluster import SlurmCluster
from slurm.helpers import before_the_step, ended, wait_for, wait_for_text

from gpudeck.slurm import BatchSpec, SlurmClient, render

RETRIED = "gpudeck: no rank started"
NO_SUCH_JOB = "export SLURM_JOB_ID=4000000000"  # srun asks slurmctld for it: no such job


def test_a_controller_outage_before_the_step_starts_is_waited_out(
    slurm: SlurmClient,
    slurm_cluster: SlurmCluster,
    spec_for: Callable[..., BatchSpec],
    tmp_path: Path,
) -> None:
    runs, result = tmp_path / "runs", tmp_path / "result"
    rank = ["sh", "-c", f"echo ran >> {runs}; echo loss=0.25 > {result}"]
    script = before_the_step(render(spec_for(rank)), srun_on_cue(tmp_path))
    job = slurm.submit(script)
    wait_for(slurm, [job], lambda s: s[job].state == "running" and (tmp_path / "at.1").exists())
    out = tmp_path / f"slurm-{job}.out"

    slurm_cluster.stop_controller()
    try:
        (tmp_path / "go.1").touch()  # srun tries slurmctld for MessageTimeout (5 s), gives up
        said = wait_for_text(out, RETRIED)
    finally:
        slurm_cluster.start_controller()
    # The second srun once slurmctld is back and the nodes have registered again: one that
    # asked meanwhile would wait on its step silently for up to 2 minutes (slurmctld's restored
    # state knows the nodes' resources only once they register), a delay, not a failure.
    (tmp_path / "go.2").touch()

    assert "Unable to confirm allocation" in said, said  # srun's own failure, step never made
    final = wait_for(slurm, [job], ended)[job]
    assert final.state == "succeeded", (final, out.read_text())
    assert runs.read_text() == "ran\n"  # once, on the attempt after slurmctld came back
    assert result.read_text() == "loss=0.25\n"
    assert not (tmp_path / "at.3").exists()
    assert not list(tmp_path.glob(".gpudeck-step-*"))  # the attempts' files are cleared


def srun_on_cue(cues: Path) -> str:
    """A shell function the batch script's `srun` then names: attempt N says it is there
    (at.N) and starts the real srun once the test creates go.N."""
    at, go = f"{cues}/at.$attempt", f"{cues}/go.$attempt"
    return f'srun() {{ touch {at}; while [ ! -e {go} ]; do sleep 0.1; done; command srun "$@"; }}'


def test_ranks_that_ran_and_failed_are_not_started_again(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    rank = ["sh", "-c", f"echo $SLURM_PROCID >> {runs}; exit 1"]
    job = slurm.submit(render(spec_for(rank, ntasks_per_node=2)))

    final = wait_for(slurm, [job], ended)[job]

    assert final.state == "failed"
    assert sorted(runs.read_text().split()) == ["0", "1"]  # each rank once
    assert RETRIED not in (tmp_path / f"slurm-{job}.out").read_text()


def test_the_retries_stop_at_their_bound(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    spec = spec_for(["sh", "-c", f"echo ran >> {runs}"], step_retry_s=3)
    job = slurm.submit(before_the_step(render(spec), NO_SUCH_JOB))

    final = wait_for(slurm, [job], ended)[job]

    assert final.state == "failed"
    said = (tmp_path / f"slurm-{job}.out").read_text()
    # Pauses of 1 then 2 s fit the 3 s bound; how many began depends on how fast srun failed.
    assert 1 <= said.count(RETRIED) <= 2, said
    assert said.count("Unable to confirm allocation") == said.count(RETRIED) + 1, said
    assert not runs.exists()


def test_the_checkpoint_signal_during_a_pause_ends_the_job_at_once(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    spec = spec_for(["true"], signal_marker=tmp_path / "stop-signal")
    job = slurm.submit(before_the_step(render(spec), NO_SUCH_JOB))
    out = tmp_path / f"slurm-{job}.out"
    wait_for_text(out, "srun again in 8 s")  # the fourth pause: 8 s, had USR1 not come

    slurm.signal(job, "USR1")  # GPUDeck's cancel: the final checkpoint's signal first
    signalled_at = time.monotonic()
    final = wait_for(slurm, [job], ended)[job]

    assert time.monotonic() - signalled_at < 4, "the 8 s pause ran on"
    assert final.state == "failed"  # GPUDeck reads it `cancelled`: it asked for the cancel
    assert out.read_text().count(RETRIED) == 4  # no srun after the signal
    assert (tmp_path / "stop-signal").exists()
