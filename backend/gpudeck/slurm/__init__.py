"""Slurm as a place to run jobs: the commands GPUDeck sends a Slurm cluster and what it reads back.

The adapter knows nothing of the database or the web (it imports only `core`, if anything): it
turns typed values into Slurm's commands, run through an injected `CommandRunner` (argv lists,
never shell strings: a local subprocess here, or SSH to a login node), and Slurm's answers
into GPUDeck's words.

    script.py   a batch script from typed values; a sweep's array split past MaxArraySize
    client.py   submit, poll (one squeue + at most one sacct whatever the number of jobs),
                cancel, signal, the array throttle, nodes and their GPUs, partitions, the
                cluster's config
    states.py   Slurm's job states and pending reasons in GPUDeck's words
    records.py  parsing squeue, sacct and scontrol output
    runner.py   the command runner protocol and the local one
    ssh.py      the runner on a login node over ssh (BatchMode, StrictHostKeyChecking)

docs/slurm.md says how it is tested (a real two-node cluster) and what the executor adds.
"""

from gpudeck.slurm.client import SlurmClient
from gpudeck.slurm.errors import SlurmError, SlurmRefused, SlurmUnreachable
from gpudeck.slurm.records import GpuGres, JobState, NodeInfo, PartitionInfo
from gpudeck.slurm.runner import CommandResult, CommandRunner, CommandTimedOut, LocalRunner
from gpudeck.slurm.script import ArrayChunk, ArraySpec, BatchSpec, render, split_array

__all__ = [
    "ArrayChunk",
    "ArraySpec",
    "BatchSpec",
    "CommandResult",
    "CommandRunner",
    "CommandTimedOut",
    "GpuGres",
    "JobState",
    "LocalRunner",
    "NodeInfo",
    "PartitionInfo",
    "SlurmClient",
    "SlurmError",
    "SlurmRefused",
    "SlurmUnreachable",
    "render",
    "split_array",
]
