"""A sweep as job arrays: the throttle holds at every poll, live edits included, and a sweep
split past MaxArraySize keeps its max_parallel across the arrays."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from slurm.cluster import MAX_ARRAY_SIZE
from slurm.helpers import ended, wait_for

from gpudeck.slurm import ArraySpec, BatchSpec, JobState, SlurmClient, render, split_array

TASK = ["sh", "-c", "echo member=$GPUDECK_MEMBER_INDEX; sleep 1"]


class RunningCount:
    """The most tasks seen running at one poll, before and after a moment the test marks."""

    def __init__(self) -> None:
        self.most = [0]

    def __call__(self, states: dict[str, JobState]) -> None:
        running = sum(s.state == "running" for s in states.values())
        self.most[-1] = max(self.most[-1], running)

    def mark(self) -> None:
        self.most.append(0)


def test_the_throttle_holds_at_every_poll_and_can_be_raised_live(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec]
) -> None:
    array = slurm.submit(render(spec_for(TASK, array=ArraySpec(count=12, max_parallel=2))))
    seen = RunningCount()

    wait_for(slurm, [array], lambda s: seen.most[-1] == 2, every=seen)
    slurm.set_array_throttle(array, 4)
    seen.mark()
    states = wait_for(slurm, [array], ended, every=seen)

    assert seen.most == [2, 4]
    assert len(states) == 12
    assert {s.state for s in states.values()} == {"succeeded"}


def test_a_sweep_split_into_arrays_keeps_max_parallel_across_them(
    slurm: SlurmClient, spec_for: Callable[..., BatchSpec], tmp_path: Path
) -> None:
    assert slurm.max_array_size() == MAX_ARRAY_SIZE
    # The cluster's 1001 would need a 1,002-member sweep; chunks of 4 split the same way.
    chunks = split_array(10, max_array_size=4)
    arrays: list[str] = []
    for chunk in chunks:
        after = arrays[-1] if arrays else None
        spec = ArraySpec(count=chunk.count, max_parallel=3, offset=chunk.offset, after=after)
        arrays.append(slurm.submit(render(spec_for(TASK, array=spec))))
    seen = RunningCount()

    states = wait_for(slurm, arrays, ended, timeout_s=60, every=seen)

    assert seen.most == [3]
    assert len(states) == 10
    assert {s.state for s in states.values()} == {"succeeded"}
    members = sorted(int(f.read_text().split("=")[1]) for f in tmp_path.glob("slurm-*_*.out"))
    assert members == list(range(10))
