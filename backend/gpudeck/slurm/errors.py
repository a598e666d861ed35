"""What can go wrong talking to Slurm, kept apart so a caller can tell a refusal from silence."""

from __future__ import annotations


class SlurmError(Exception):
    """A Slurm command failed; the message is Slurm's own where it gave one."""


class SlurmRefused(SlurmError):
    """Slurm answered and said no (sbatch: an unknown partition, a QOS limit, too many GPUs)."""


class SlurmUnreachable(SlurmError):
    """slurmctld (or slurmdbd) did not answer: nothing is known, nothing must be concluded."""
