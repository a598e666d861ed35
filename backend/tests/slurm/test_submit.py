"""Submitting to the real cluster: GPUs, nodes and sbatch's refusals as GPUDeck reads them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from slurm.cluster import GPU_TYPE, GPUS_PER_NODE, NODES
from slurm.helpers import ended, gate, wait_for

from gpudeck.slurm import BatchSpec, SlurmClient, SlurmRefused, render

SHOW = (
    'echo "$SLURMD_NODENAME rank=$SLURM_PROCID cvd=$CUDA_VISIBLE_DEVICES jobgpus=$SLURM_JOB_GPUS"'
)


def output_lines(tmp_path: Path, job_id: str) -> list[str]:
    return (tmp_path / f"slurm-{job_id}.out").read_text().splitlines()


def test_a_two_gpu_job_holds_two_gpus_and_its_rank_sees_them(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    spec = spec_for(["sh", "-c", f"{SHOW}; {gate(release)}"], gpus_per_node=2, gpu_type=GPU_TYPE)
    job = slurm.submit(render(spec))

    running = wait_for(slurm, [job], lambda s: s[job].state == "running")[job]
    assert (running.gpus, running.comment) == (2, f"gpudeck:{spec.gpudeck_job_id}")
    held = {n.name: n.gpus[0] for n in slurm.nodes()}[running.nodes or ""]
    assert (held.type, held.count, held.used, held.used_indices) == (GPU_TYPE, 2, 2, (0, 1))

    release.touch()
    final = wait_for(slurm, [job], ended)[job]
    assert (final.state, final.gpus, final.exit_code) == ("succeeded", 2, 0)
    [line] = output_lines(tmp_path, job)
    node, rank, visible, job_gpus = line.split()
    assert (node, rank) == (running.nodes, "rank=0")
    # Slurm's own numbering of the node's GPUs, the devices gres.conf lists, both of them.
    assert visible.removeprefix("cvd=").split(",") == ["0", "1"]
    assert job_gpus.removeprefix("jobgpus=").split(",") == ["0", "1"]


def test_a_job_across_the_two_nodes_runs_its_ranks_on_both(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    spec = spec_for(["sh", "-c", SHOW], nodes=2, ntasks_per_node=2, gpus_per_node=GPUS_PER_NODE)
    job = slurm.submit(render(spec))

    final = wait_for(slurm, [job], ended)[job]
    assert (final.state, final.gpus) == ("succeeded", 2 * GPUS_PER_NODE)
    ranks = sorted(line.split() for line in output_lines(tmp_path, job))
    assert [r[:2] for r in ranks] == [
        [node, f"rank={rank}"] for rank, node in enumerate(n for n in NODES for _ in range(2))
    ]
    assert all(r[2] == "cvd=0,1" for r in ranks), ranks  # each node's two GPUs, to each rank


@pytest.mark.parametrize(
    ("fields", "slurm_says"),
    [
        ({"partition": "nosuchpartition"}, "Invalid partition name specified"),
        ({"gpus_per_node": GPUS_PER_NODE + 1}, "Requested node configuration is not available"),
    ],
    ids=["unknown-partition", "more-gpus-than-a-node"],
)
def test_sbatch_refusing_a_job_says_why_and_queues_nothing(
    slurm: SlurmClient,
    spec_for: Callable[..., BatchSpec],
    fields: dict[str, object],
    slurm_says: str,
) -> None:
    spec = spec_for(["true"], **fields)
    with pytest.raises(SlurmRefused, match=slurm_says):
        slurm.submit(render(spec))
    # Nothing waits or runs. (Slurm 22.05 keeps a record of some refusals: a job asking more
    # GPUs than a node has reads FAILED, reason BadConstraints, in squeue --states=all.)
    live = slurm.run(["squeue", "--noheader", "--format=%k"], timeout_s=20).stdout.split()
    assert f"gpudeck:{spec.gpudeck_job_id}" not in live
