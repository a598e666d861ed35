"""6. Map jobs: the `activations` kind extracting a random GPT-2's last-block output, every
strategy, on 1 -> N devices (bench/map_scaling.py's code path, on CUDA ranks).

Items/s is the map phase (the first rank's `map_start` to the last `map_chunk`: model loading
and the final consolidation left out). Beside it, in the same run: the same forward passes in a
plain loop on device 0 (no engine: rows copied to host memory, nothing written). Goals: the
engine >= 0.9x plain at 1 rank; N ranks >= 0.9 x N x 1 rank. On a GPU the data directory is on
tmpfs when it has room (each run writes GBs, twice: chunks and the consolidated file), so the
figure is the engine's, not the disk's.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import map_scaling as scaling
import torch
from map_scaling import Shape

from gpucheck.rows import Check, Row
from gpudeck.engine.contract import DeviceType
from gpudeck.engine.map.options import Strategy

GOAL_PLAIN, GOAL_SCALING = 0.9, 0.9
# A dry run is mostly rank starts (~6 s each on 2 busy cores): the bench's code is the same for
# every strategy (the strategy is only a config field; tests/kinds/map runs each strategy's
# ranks), so it runs one strategy at 1 rank (the row against the plain loop) and at 2 (the row
# against 1 rank): 3 rank starts in 2 runs, not 4 in 3. A GPU: every strategy at every count.
DRY_PLAN = {(1, "dynamic"), (2, "dynamic")}
COMMAND = "bench/gpucheck/map_jobs.py (bench/map_scaling.py on {device} ranks)"


@dataclass(frozen=True)
class Setup:
    shape: Shape
    items: int  # sequences
    chunk: int
    batch: int

    @property
    def output_bytes(self) -> int:  # fp32 rows, every position
        return self.items * self.shape.context * self.shape.width * 4


# ~31 GFLOP a sequence: ~1,000 sequences/s in fp32 (no TF32) on an H100/H200, so ~3 s of map
# phase and 2.4 GB of rows a run; ~13 s a run with the rank's start and the consolidation.
GPU = Setup(Shape(layers=8, width=768, heads=12, context=256), 3072, 256, 64)
DRY = Setup(Shape(layers=2, width=64, heads=2, context=32), 64, 8, 4)


def _data_root(check: Check, setup: Setup) -> Path:
    """tmpfs if it holds a run's output 2.5 times over (chunks, consolidated file, slack)."""
    shm = Path("/dev/shm")
    roomy = shm.is_dir() and shutil.disk_usage(shm).free > 2.5 * setup.output_bytes
    return shm if roomy and not check.dry_run else check.work_dir


def _plain_rate(data_dir: Path, setup: Setup, device_type: DeviceType) -> float:
    """Items/s of the plain loop on device 0, in this process, timed like the map phase."""
    torch.set_num_threads(scaling.rank_threads(device_type, 1))
    device = torch.device(device_type, 0) if device_type == "cuda" else torch.device("cpu")
    model, module, ids = scaling.load_plain(data_dir, setup.shape, device, 0, setup.items)
    began = time.perf_counter()
    scaling.plain_passes(model, module, ids, setup.batch)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    took = time.perf_counter() - began
    del model, module
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the ranks' `memory` strategy measures free memory
    return setup.items / took


def run(check: Check) -> Iterator[Row]:
    setup = check.pick(GPU, DRY)
    assert isinstance(setup, Setup)
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # no weight-loading bars (ranks inherit it)
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the plain loop's device 0 is rank 0's
    device = check.device_type
    strategies: tuple[str, ...] = get_args(Strategy)
    plan = [(n, s) for n in check.rank_counts() for s in strategies]
    if check.dry_run:
        plan = [(n, s) for n, s in plan if (n, s) in DRY_PLAN]
    command = COMMAND.format(device=device)
    root = _data_root(check, setup)
    with tempfile.TemporaryDirectory(prefix="gpudeck-map-jobs-", dir=root) as tmp:
        data_dir = Path(tmp)
        print(f"   building {setup.shape.describe()}, {setup.items} sequences in {tmp}", flush=True)
        scaling.build(data_dir, setup.items, setup.shape)
        yield Row(
            "map: setup",
            f"{setup.shape.describe()}, fp32, {setup.items} sequences, chunk {setup.chunk}, "
            f"batch {setup.batch}, {device}, data on {root}",
            "-",
            "info",
            command,
            {**vars(setup.shape), "items": setup.items, "chunk": setup.chunk,
             "batch": setup.batch, "device": device, "data_root": str(root)},
        )  # fmt: skip
        plain = _plain_rate(data_dir, setup, device)
        print(f"   plain loop: {plain:.1f} items/s", flush=True)
        yield Row(
            "map: plain loop, 1 device",
            f"{plain:.1f} items/s",
            "-",
            "info",
            command,
            {"plain_items_per_s": plain},
        )
        yield from _strategies(data_dir, setup, device, plan, plain, command)
        if len(check.rank_counts()) < 2:
            yield Row.skipped("map: scaling 1 -> N", f"{check.gpus} device: nothing to scale")


def _strategies(
    data_dir: Path,
    setup: Setup,
    device: DeviceType,
    plan: list[tuple[int, str]],
    plain: float,
    command: str,
) -> Iterator[Row]:
    """Each (ranks, strategy) in order; 1 rank against the plain loop, N against 1 rank."""
    one: dict[str, float] = {}
    for world, strategy in plan:
        print(f"   {strategy} on {world} {device} rank(s)", flush=True)
        rate, _, phases = scaling.run(
            data_dir, world, setup.items, strategy, setup.chunk, setup.batch,
            shape=setup.shape, device_type=device,
        )  # fmt: skip
        data = {"strategy": strategy, "ranks": world, "items_per_s": rate, **phases}
        if world == 1:
            one[strategy] = rate
            yield _vs_plain(strategy, rate, plain, phases, command, data)
        else:
            yield _vs_one(strategy, world, rate, one[strategy], command, data)


def _vs_plain(
    strategy: str,
    rate: float,
    plain: float,
    phases: dict[str, float],
    command: str,
    data: dict[str, object],
) -> Row:
    other = phases["map"] - phases["compute"] - phases["write"] - phases["publish"]
    return Row.judged(
        f"map: {strategy}, 1 rank vs plain loop",
        f"{rate:.1f} items/s, {rate / plain:.2f}x plain ({plain:.1f}); seconds: compute "
        f"{phases['compute']:.2f}, write {phases['write']:.2f}, publish "
        f"{phases['publish']:.3f}, other {other:.2f}",
        f">= {GOAL_PLAIN}x plain",
        rate / plain >= GOAL_PLAIN,
        command,
        **data,
        other=other,
        plain_items_per_s=plain,
        map_over_plain=rate / plain,
    )


def _vs_one(
    strategy: str, world: int, rate: float, one: float, command: str, data: dict[str, object]
) -> Row:
    efficiency = rate / (world * one)
    return Row.judged(
        f"map: {strategy}, {world} ranks vs 1",
        f"{rate:.1f} items/s, {rate / one:.2f}x 1 rank ({one:.1f}), efficiency {efficiency:.0%}",
        f">= {GOAL_SCALING:.0%} of linear",
        efficiency >= GOAL_SCALING,
        command,
        **data,
        one_rank_items_per_s=one,
        speedup=rate / one,
        efficiency=efficiency,
    )
