"""The entry point of one rank started by Slurm's `srun`: `python -m gpudeck.engine.srun CONTRACT`
(or an array's directory, whose task-<SLURM_ARRAY_TASK_ID>/contract.json is the member's).

On GPUDeck's own nodes the worker gives each rank its place; on a Slurm cluster `srun` starts
the ranks (one task per GPU) and each finds its place in Slurm's variables instead:
SLURM_PROCID (the rank), SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID, SLURM_NNODES. The rest of
the launch contract comes from the job's contract.json on the shared filesystem, written by
GPUDeck when it submitted the job. From there the rank runs as on GPUDeck's own nodes
(engine.rank.run_rank: torchrun's environment, the same kind code, the same events).

- Devices: Slurm sets CUDA_VISIBLE_DEVICES to the GPUs it gave the job on this node (Slurm's
  own numbering inside the job); local rank k takes the k-th of them. A node whose CUDA sees
  no device at all (a test cluster's fake GPUs) runs the rank on CPU with gloo, and says so.
- Rendezvous: rank 0 hosts the store on the node that runs the batch script, whose address
  srun gives every task (SLURM_LAUNCH_NODE_IPADDR), on a port drawn from the Slurm job id.
- A requeued job (preempted, a node failed, `scontrol requeue`) runs this again with the same
  contract: it continues from its own newest complete checkpoint when it has one.
- Collectives bind to the interface that reaches that address (gloo and NCCL otherwise take
  the one the host name resolves to, often loopback).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from gpudeck.core.netif import interface_of
from gpudeck.engine.checkpoint_dir import complete_checkpoints
from gpudeck.engine.contract import CONTRACT_FILE, DeviceType, JobLaunch, RankPlace

log = logging.getLogger(__name__)
PORT_BASE, PORT_SPAN = 15000, 15000  # below Linux's ephemeral range (32768-)


class NotInSlurmStep(RuntimeError):
    pass


def rank_place(
    launch: JobLaunch, env: Mapping[str, str], cuda_devices: int
) -> tuple[RankPlace, list[str]]:
    """This task's place in the job from Slurm's variables, and what it saw (log lines).
    `cuda_devices`: how many devices CUDA sees in this task (0: run on CPU)."""
    try:
        rank, local_rank = int(env["SLURM_PROCID"]), int(env["SLURM_LOCALID"])
        world, node_rank = int(env["SLURM_NTASKS"]), int(env["SLURM_NODEID"])
        nnodes, slurm_job = int(env["SLURM_NNODES"]), int(env["SLURM_JOB_ID"])
        master = env["SLURM_LAUNCH_NODE_IPADDR"]
    except (KeyError, ValueError) as exc:
        raise NotInSlurmStep(f"not a task of a Slurm job step: {exc!r} missing or wrong") from exc
    if world % nnodes:
        raise NotInSlurmStep(f"{world} tasks do not split evenly over {nnodes} nodes")
    local_world = world // nnodes
    visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    device_type: DeviceType = "cuda" if cuda_devices > 0 and launch.device_type == "cuda" else "cpu"
    if device_type == "cuda":
        if len(visible) < local_world:
            raise NotInSlurmStep(
                f"Slurm gave this node's tasks {len(visible)} GPUs ({','.join(visible)}) "
                f"for {local_world} ranks"
            )
        indices = tuple(int(d) for d in visible[:local_world])
    else:
        indices = tuple(range(local_world))
    port = launch.master_port or PORT_BASE + slurm_job % PORT_SPAN
    own = complete_checkpoints(Path(launch.checkpoint_dir))
    placed = launch.replace(
        resume_from=str(own[-1]) if own else launch.resume_from,
        device_type=device_type,
        device_indices=indices,
        node_rank=node_rank,
        nnodes=nnodes,
        rank_offset=rank - local_rank,
        total_world_size=world,
        master_addr=master,
        master_port=port,
        socket_ifname=launch.socket_ifname or _interface_towards(master),
    )
    seen = [
        f"rank {rank} of {world} (node {node_rank} of {nnodes}, local rank {local_rank}) "
        f"in Slurm job {slurm_job} on {env.get('SLURMD_NODENAME', socket.gethostname())}",
        f"Slurm gave this node's tasks CUDA_VISIBLE_DEVICES={','.join(visible) or '(none)'}"
        f" SLURM_JOB_GPUS={env.get('SLURM_JOB_GPUS', '(none)')}",
    ]
    if own:
        seen.append(f"resuming from its own checkpoint {own[-1].name} (a requeued job)")
    if device_type == "cpu":
        seen.append("CUDA sees no device here: the rank runs on CPU with gloo")
    return RankPlace(placed, local_rank), seen


def _interface_towards(address: str) -> str | None:
    """The interface this host reaches `address` by (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((address, 9))
            return interface_of(probe.getsockname()[0])
    except OSError:
        return None


def contract_path(given: Path, env: Mapping[str, str]) -> Path:
    """The job's contract file; given a directory (a sweep's array), its task's:
    <dir>/task-<SLURM_ARRAY_TASK_ID>/contract.json."""
    if not given.is_dir():
        return given
    task = env.get("SLURM_ARRAY_TASK_ID", "")
    if not task.isdigit():
        raise NotInSlurmStep(f"{given} is an array's directory, and this is no array task")
    return given / f"task-{task}" / CONTRACT_FILE


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit("usage: python -m gpudeck.engine.srun CONTRACT_JSON|ARRAY_DIR")
    launch = JobLaunch.from_json(contract_path(Path(argv[1]), os.environ).read_text())
    import torch  # after the argument check: a wrong call answers at once

    place, seen = rank_place(launch, os.environ, torch.cuda.device_count())
    for line in seen:
        print(f"gpudeck: {line}", file=sys.stderr, flush=True)
    os.environ.update(place.environment())
    from gpudeck.engine.rank import run_rank

    run_rank(place)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    main(sys.argv)
