"""Cancel, the final-checkpoint signal and the time limit, as GPUDeck reads them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from slurm.helpers import ended, gate, wait_for

from gpudeck.slurm import ArraySpec, BatchSpec, SlurmClient, render

# A rank that says when it is asked for its final checkpoint, then runs on until killed.
RANK = [
    "sh",
    "-c",
    "trap 'echo final checkpoint rank=$SLURM_PROCID' USR1; echo started; "
    "while :; do sleep 0.1; done",
]


def test_a_cancel_after_the_checkpoint_signal_reads_cancelled(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    job = slurm.submit(render(spec_for(RANK, ntasks_per_node=2)))
    out = tmp_path / f"slurm-{job}.out"
    wait_for(slurm, [job], lambda s: out.exists() and out.read_text().count("started") == 2)

    slurm.signal(job, "USR1")
    wait_for(slurm, [job], lambda s: out.read_text().count("final checkpoint") == 2)
    slurm.cancel(job)

    final = wait_for(slurm, [job], ended)[job]
    assert final.state == "cancelled"
    said = sorted(line for line in out.read_text().splitlines() if "final" in line)
    assert said == ["final checkpoint rank=0", "final checkpoint rank=1"]
    slurm.cancel(job)  # again, once it has ended: no error


def test_cancelling_one_array_task_ends_that_member_alone(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    array = slurm.submit(
        render(spec_for(["sh", "-c", gate(release)], array=ArraySpec(count=3, max_parallel=3)))
    )
    wait_for(slurm, [array], lambda s: [t.state for t in s.values()] == ["running"] * 3)

    slurm.cancel(array, array_task=1)
    wait_for(slurm, [array], lambda s: s[f"{array}_1"].state == "cancelled")
    release.touch()

    states = wait_for(slurm, [array], ended)
    # The tasks (sacct may also list the array's own record by its id once every task ended).
    tasks = {k: s.state for k, s in states.items() if k.startswith(f"{array}_")}
    assert tasks == {
        f"{array}_0": "succeeded", f"{array}_1": "cancelled", f"{array}_2": "succeeded"
    }  # fmt: skip


@pytest.mark.long
def test_the_time_limit_signals_for_a_checkpoint_then_reads_timeout(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    job = slurm.submit(render(spec_for(RANK, time_limit_s=600, signal_before_s=40)))
    wait_for(slurm, [job], lambda s: s[job].state == "running")
    # Slurm keeps limits in minutes and checks them every 30 s: a 1-minute limit would take
    # 60-90 s. The limit's end moved 31 s ahead takes 31-60 s, through the same check: the
    # first one sends USR1 (40 s ahead of the end), a later one ends the job.
    moved = slurm.run(["scontrol", "update", f"JobId={job}", "EndTime=now+31"], timeout_s=20)
    assert moved.returncode == 0, moved.stderr

    final = wait_for(slurm, [job], ended, timeout_s=90)[job]

    assert final.state == "timeout"
    said = (tmp_path / f"slurm-{job}.out").read_text()
    assert said.startswith("started\n"), said
    assert "final checkpoint rank=0" in said, said
