"""Waiting on the real cluster's jobs from a test."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from gpudeck.slurm import JobState, SlurmClient

WAIT_S = 30.0


def wait_for(
    slurm: SlurmClient,
    job_ids: Sequence[str],
    done: Callable[[dict[str, JobState]], bool],
    timeout_s: float = WAIT_S,
    every: Callable[[dict[str, JobState]], None] | None = None,
) -> dict[str, JobState]:
    """Poll until `done` holds (calling `every` on each poll); the last poll."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = slurm.poll(job_ids)
        if every is not None:
            every(states)
        if done(states):
            return states
        assert time.monotonic() < deadline, f"still {states}"
        time.sleep(0.2)


def ended(states: dict[str, JobState]) -> bool:
    return all(s.state in ("succeeded", "failed", "cancelled", "timeout") for s in states.values())


def gate(path: Path, started: Path | None = None) -> str:
    """A shell line that waits until `path` exists: a job that runs until the test lets it go.
    With `started`, it first creates that file: the job's own command runs (srun has its step),
    which Slurm's RUNNING does not say (that is the batch script's start)."""
    touch = f"touch {started}; " if started is not None else ""
    return f"{touch}while [ ! -e {path} ]; do sleep 0.1; done"


def before_the_step(script: str, line: str) -> str:
    """`script` with `line` run by the batch shell just before its first srun: a test's way to
    hold the job between its allocation and its step, or to make srun fail."""
    anchor = '\nstarted="'
    assert script.count(anchor) == 1, script
    return script.replace(anchor, f"\n{line}{anchor}")


def wait_for_text(path: Path, text: str, count: int = 1, timeout_s: float = WAIT_S) -> str:
    """Wait until `path` holds `text` `count` times (a file the job writes, read without
    Slurm: for while slurmctld is down); what it holds then."""
    deadline = time.monotonic() + timeout_s
    while True:
        said = path.read_text(errors="replace") if path.exists() else ""
        if said.count(text) >= count:
            return said
        assert time.monotonic() < deadline, f"{path} holds {said!r}"
        time.sleep(0.1)
