"""Section 8: sharing a device by memory (docs/sharing.md). Four small SAE sweep members (d_sae
4k-16k), each held to its reservation as the worker starts a sharing job (its estimate + the
CUDA context reserve; engine/rank.py caps the allocator), packed on one GPU against the same four
one after another:

a. the throughput ratio (the four's work over the packed run's wall clock, against the sum of
   their runs alone; goal >= 1.5x) and each member's slowdown (its training rate alone over its
   rate packed, as Gandiva reports ~19 % a co-located job);
b. 0 out-of-memory errors in 20 packed repeats (fewer when the time budget runs out: said so);
c. a member whose reservation leaves its allocator a quarter of its estimate dies alone (its
   allocator's refusal), its three neighbours succeed;
d. the CUDA context reserve of this GPU model: what a member's process holds on the device
   beyond its allocator's peak (NVML's memory in use, less the baseline, less
   max_memory_reserved), the most of the four alone: the value to configure.

The members read one activation file (datasets/activations.npy, written once from the seeded
synthetic source), as a lab's sweep reads the activations it extracted: the synthetic source
draws every batch on the rank's CPU, and a sharing rank has one thread, so on the first H200 run
(2026-11-28) the four members alone took the section's whole 420 s drawing data (85 ms a batch
of 4096 on one thread) while the GPU idled.

The dry run runs (a) with two tiny members on CPU, so that the code cannot rot; (b)-(d) need an
allocator to cap and are not run.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpucheck.rows import Check, Row
from gpucheck.sharing_runs import MemberRun, device_peak, member_launch, run_members
from gpudeck.core.config import DEFAULT_CUDA_CONTEXT_RESERVE_BYTES
from gpudeck.kinds.sae.config import SyntheticDataset
from gpudeck.kinds.sae.data import SyntheticSource
from gpudeck.services.submit.estimates import estimate_bytes_per_device

MIB = 1024**2
GOAL_RATIO = 1.5
REPEATS = 20
REPEAT_BUDGET_S = 240.0  # the repeats stop past this, and their row says how many ran
# A repeat is about memory, whose peak comes in the first steps and the checkpoint: short runs.
REPEAT_STEPS = 100
DATASET = "activations.npy"  # under <data dir>/datasets
DATASET_BATCHES = 16  # rows in the file: this many batches; members go round it in epochs


def member_configs(check: Check, steps: int | None = None) -> list[dict[str, Any]]:
    """The members: long enough on a GPU for training, not start-up, to rule the wall clock."""
    sizes: tuple[int, ...]
    if check.dry_run:
        d_in, batch, sizes, default_steps = 16, 64, (64, 128), 20
    else:
        d_in, batch, sizes, default_steps = 768, 4096, (4096, 8192, 12288, 16384), 1500
    steps = steps or default_steps
    return [
        {"d_in": d_in, "d_sae": d_sae, "batch_size": batch, "steps": steps, "seed": i,
         "metrics_interval": steps // 2, "checkpoint_interval": 10**8,
         "dataset": {"type": "file", "path": DATASET}}
        for i, d_sae in enumerate(sizes)
    ]  # fmt: skip


def throughput_ratio(alone_s: Sequence[float], packed_s: float) -> float:
    """The same members' work per second packed, over one after another."""
    return sum(alone_s) / packed_s


def slowdowns(alone: Sequence[MemberRun], packed: Sequence[MemberRun]) -> list[float | None]:
    """Each member's training rate alone over its rate packed, less 1 (0.19: 19 % slower)."""
    return [
        a.activations_per_s / p.activations_per_s - 1
        if a.activations_per_s and p.activations_per_s
        else None
        for a, p in zip(alone, packed, strict=True)
    ]


def context_reserve_bytes(device_used_bytes: int, allocator_peak_bytes: int) -> int:
    """What a process holds on its device beyond its allocator: the CUDA context, its kernels,
    cuBLAS and NCCL's own buffers."""
    return max(0, device_used_bytes - allocator_peak_bytes)


def run(check: Check) -> Iterator[Row]:
    if not check.dry_run and not torch.cuda.is_available():
        yield Row.skipped("sharing a device", "this torch sees no CUDA device")
        return
    configs = member_configs(check)
    context = DEFAULT_CUDA_CONTEXT_RESERVE_BYTES
    reserved = [(estimate_bytes_per_device("sae", c, 1) or 0) + context for c in configs]
    with tempfile.TemporaryDirectory(dir=check.work_dir) as tmp:
        write_activations(Path(tmp), configs[0]["d_in"], configs[0]["batch_size"])
        members = Members(check, Path(tmp), configs, context)
        alone, alone_peaks = members.one_after_another(reserved)
        packed_s, packed = members.packed(reserved)
        yield from _throughput_rows(alone, packed_s, packed, len(configs))
        if check.dry_run:
            why = "dry run: the CPU has no allocator to cap"
            yield Row.skipped(f"out-of-memory errors in {REPEATS} packed repeats", why, "0")
            yield Row.skipped("an over-allocating member dies alone", why, "it alone fails")
            yield Row.skipped("CUDA context reserve per process", why)
            return
        yield _context_row(alone, alone_peaks, context)
        yield _over_allocating_row(members, reserved, configs)
        members.configs = member_configs(check, REPEAT_STEPS)
        yield _repeats_row(members, reserved)


def write_activations(data_dir: Path, d_in: int, batch: int) -> Path:
    """The members' training data: DATASET_BATCHES batches of the seeded synthetic source's
    rows, drawn once here with every core."""
    rows = SyntheticSource(SyntheticDataset(), d_in, seed=0).rows(
        torch.arange(DATASET_BATCHES * batch)
    )
    path = data_dir / "datasets" / DATASET
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, rows.numpy().astype(np.float32))
    return path


class Members:
    """Runs the section's members with their reservations in a scratch data directory."""

    def __init__(self, check: Check, root: Path, configs: list[dict[str, Any]], context: int):
        self.check, self.root, self.configs = check, root, configs
        self.context = context
        self.runs = 0

    def _launches(self, reserved: Sequence[int], only: int | None = None) -> list[Any]:
        picked = range(len(self.configs)) if only is None else [only]
        launches = []
        for i in picked:
            self.runs += 1
            run_dir = self.root / f"run{self.runs}"
            run_dir.mkdir()
            launches.append(
                member_launch(
                    run_dir,
                    self.root,
                    self.runs,
                    self.configs[i],
                    self.check.device_type,
                    reserved[i],
                    self.context,
                )
            )
        return launches

    def one_after_another(self, reserved: Sequence[int]) -> tuple[list[MemberRun], list[int]]:
        """Each member alone: its run, and NVML's peak in use beyond the baseline."""
        runs, peaks = [], []
        for i in range(len(self.configs)):
            with device_peak(not self.check.dry_run) as seen:
                wall_s, (found,) = run_members(self._launches(reserved, i))
            runs.append(dataclasses.replace(found, wall_s=wall_s))  # as the packed run's
            peaks.append(seen["peak"] - seen["baseline"] if seen else 0)
        return runs, peaks

    def packed(self, reserved: Sequence[int]) -> tuple[float, list[MemberRun]]:
        return run_members(self._launches(reserved))


def _throughput_rows(
    alone: list[MemberRun], packed_s: float, packed: list[MemberRun], n: int
) -> Iterator[Row]:
    failed = [i for i, r in enumerate(alone + packed) if r.exit_code != 0]
    if failed:
        yield Row("members ran", f"runs {failed} failed (alone, then packed)", "all", "FAIL")
    ratio = throughput_ratio([r.wall_s for r in alone], packed_s)
    yield Row.judged(
        f"{n} members packed on one device vs one after another",
        f"{ratio:.2f}x the throughput ({sum(r.wall_s for r in alone):.1f} s one after another, "
        f"{packed_s:.1f} s packed)",
        f">= {GOAL_RATIO}x",
        ratio >= GOAL_RATIO,
        "bench/gpucheck/sharing.py: sae members via engine.rank.run_rank, capped",
        ratio=ratio,
    )
    each = slowdowns(alone, packed)
    text = ", ".join("?" if s is None else f"{s:+.0%}" for s in each)
    yield Row("each member's slowdown packed", f"{text} (Gandiva: ~19 %)", "", "info",
              data={"slowdowns": each})  # fmt: skip


def _repeats_row(members: Members, reserved: Sequence[int]) -> Row:
    started, results = time.monotonic(), list[list[MemberRun]]()
    while len(results) < REPEATS and (
        not results or time.monotonic() - started < REPEAT_BUDGET_S  # one at least
    ):
        results.append(members.packed(reserved)[1])
    ooms = sum(r.out_of_memory for runs in results for r in runs)
    others = sum(r.exit_code != 0 and not r.out_of_memory for runs in results for r in runs)
    cut = "" if len(results) == REPEATS else f" (time budget {REPEAT_BUDGET_S:.0f} s reached)"
    return Row.judged(
        f"out-of-memory errors in {REPEATS} packed repeats",
        f"{ooms} OOM, {others} other failures in {len(results)} of {REPEATS} repeats{cut}",
        "0",
        ooms == 0 and others == 0,
        f"the packed run again ({REPEAT_STEPS} steps), each member capped at its estimate",
        repeats=len(results),
        ooms=ooms,
    )


def _over_allocating_row(
    members: Members, reserved: Sequence[int], configs: list[dict[str, Any]]
) -> Row:
    """The last member's reservation leaves its allocator a quarter of its estimate: well under
    its training step's peak (the estimate also counts the context, NCCL and cuBLAS)."""
    short = [*reserved[:-1], members.context + (reserved[-1] - members.context) // 4]
    _, runs = members.packed(short)
    last, others = runs[-1], runs[:-1]
    ok = last.out_of_memory and all(r.exit_code == 0 for r in others)
    figure = (
        f"d_sae {configs[-1]['d_sae']} capped at a quarter of its estimate: "
        f"{'OutOfMemoryError' if last.out_of_memory else f'exit {last.exit_code}'}; "
        f"its {len(others)} neighbours: exit codes {[r.exit_code for r in others]}"
    )
    return Row.judged("an over-allocating member dies alone", figure, "it alone fails", ok)


def _context_row(alone: list[MemberRun], peaks: list[int], configured: int) -> Row:
    measured = [
        context_reserve_bytes(peak, r.max_reserved_bytes or 0)
        for r, peak in zip(alone, peaks, strict=True)
    ]
    most = max(measured)
    figure = (
        f"{most / MIB:.0f} MiB (members alone: {', '.join(f'{m / MIB:.0f}' for m in measured)} "
        f"MiB; configured {configured / MIB:.0f} MiB): set GPUDECK_CUDA_CONTEXT_RESERVE_BYTES="
        f"{most} for this GPU model"
    )
    return Row("CUDA context reserve per process", figure, "", "info", data={"bytes": most})
