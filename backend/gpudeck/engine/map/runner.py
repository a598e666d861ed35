"""`run_map`: what a map kind's `train(ctx, config)` calls in every rank.

Every rank computes the same plan from the item count and the options, skips chunks already
written (resume), processes its own chunks (or claims them one by one: `dynamic`) and writes
each atomically, on a thread of its own while it computes the next (writer.py). After a
barrier, rank 0 writes the manifest. Ranks beyond the fallback count still join the
collectives, with no chunk to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from gpudeck.engine.context import TrainContext
from gpudeck.engine.map import output, plan
from gpudeck.engine.map.batch import auto_batch_size
from gpudeck.engine.map.claim import ClaimQueue
from gpudeck.engine.map.options import MapOptions
from gpudeck.engine.map.writer import ChunkWriter

WAIT_TIMEOUT = timedelta(days=7)
# (start, stop, batch_size) -> the chunk's tensors, rows in input order
ChunkFn = Callable[[int, int, int], Mapping[str, torch.Tensor]]


@dataclass
class MapResult:
    completed: bool  # False: stopped (SIGTERM) before every chunk was written
    chunks_written: list[int] = field(default_factory=list)  # by this rank, in this run
    batch_size: int = 0
    active_ranks: int = 1
    manifest: dict[str, Any] | None = None  # rank 0, when completed


def _distributed(ctx: TrainContext) -> bool:
    return ctx.world_size > 1 and dist.is_initialized()


def _wait_group(ctx: TrainContext) -> Any:
    """A gloo group for the map's few collectives, whose timeout outlasts any share of work.

    A rank with little to do (a static plan, a fallback, the end of a dynamic queue) waits at
    the final barrier for the slowest; under the job's group it would time out after 10
    minutes. A dead peer is not left to this timeout: the worker ends a job when a rank dies.
    """
    if not _distributed(ctx):
        return None
    return dist.new_group(backend="gloo", timeout=WAIT_TIMEOUT)


def _barrier(group: Any) -> None:
    if group is not None:
        dist.barrier(group=group)


def device_free_bytes(device: torch.device) -> int:
    """Free memory of this rank's device: CUDA's own figure; on CPU, MemAvailable."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _free_memory_of_all(ctx: TrainContext, options: MapOptions, group: Any) -> list[int]:
    if options.free_memory_bytes is not None:
        if len(options.free_memory_bytes) < ctx.world_size:
            raise ValueError(
                f"free_memory_bytes has {len(options.free_memory_bytes)} figures "
                f"for {ctx.world_size} ranks"
            )
        return list(options.free_memory_bytes[: ctx.world_size])
    mine = device_free_bytes(ctx.device)
    if group is None:
        return [mine]
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, mine, group=group)
    return [int(v) for v in gathered]


def _my_chunks(
    ctx: TrainContext,
    options: MapOptions,
    num_chunks: int,
    ranks: int,
    free: list[int],
    done: set[int],
    queue: ClaimQueue | None,
) -> tuple[Iterable[int], int | None]:
    """This rank's chunks still to do, and how many (None: `dynamic`, known only at the end)."""
    if ctx.rank >= ranks:
        return [], 0
    if queue is not None:
        return iter(queue.claim, None), None
    capacity = None
    if options.max_items_per_device:
        capacity = max(1, options.max_items_per_device // options.chunk_size)
    mine = plan.assign(
        num_chunks, ranks, options.strategy, weights=free[:ranks], capacity_chunks=capacity
    )[ctx.rank]
    todo = [i for i in mine if i not in done]
    return todo, len(todo)


def run_map(
    ctx: TrainContext,
    *,
    out_dir: Path,
    num_items: int,
    options: MapOptions,
    process: ChunkFn,
    meta: Mapping[str, Any],
    estimate_bytes: Callable[[int], int] | None = None,
) -> MapResult:
    """Process every chunk not yet in `out_dir`; rank 0 writes the manifest when all are."""
    chunks = plan.chunk_bounds(num_items, options.chunk_size)
    ranks = plan.active_ranks(num_items, ctx.world_size, options.min_items_per_device)
    group = _wait_group(ctx)
    free = _free_memory_of_all(ctx, options, group)
    batch = _batch_size(options, free[ctx.rank], estimate_bytes)
    job = {**meta, "num_items": num_items, "chunk_size": options.chunk_size}
    output.check_job(out_dir, job, write=ctx.is_main)  # every rank: all fail alike
    done = output.written_chunks(out_dir)  # read by every rank before anyone writes
    queue = None
    if options.strategy == "dynamic":
        queue = ClaimQueue(out_dir / ".claims", [i for i in range(len(chunks)) if i not in done])
        if ctx.is_main:
            queue.reset()
    if ctx.is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        output.remove_partial_writes(out_dir)
    _barrier(group)
    result = MapResult(completed=False, batch_size=batch, active_ranks=ranks)
    todo, rank_chunks = _my_chunks(ctx, options, len(chunks), ranks, free, done, queue)
    ctx.publish(
        "map_start",
        {
            "num_items": num_items,
            "num_chunks": len(chunks),
            "chunks_done": len(done),
            "active_ranks": ranks,
            "batch_size": batch,
            "strategy": options.strategy,
            "rank_chunks": rank_chunks,  # this rank's share of this run (None: dynamic)
            "output_dir": str(out_dir),  # the job page says where the output went
        },
    )
    progress = _Progress(ctx, result, rank_chunks, num_items)
    with ChunkWriter(out_dir) as writer:
        for index in todo:
            if ctx.stop_flag.requested:
                break
            start, stop = chunks[index]
            for chunk, new in writer.write(index, process(start, stop, batch)):
                progress.chunk_done(chunk, new, items=_size(chunks[chunk]))
        for chunk, new in writer.finish():
            progress.chunk_done(chunk, new, items=_size(chunks[chunk]))
    _barrier(group)
    if _any_rank_stopped(ctx, group):
        return result
    result.completed = True
    if ctx.is_main:
        result.manifest = output.write_manifest(out_dir, len(chunks), job)
        (out_dir / ".claims").unlink(missing_ok=True)
    _barrier(group)
    return result


def _size(bounds: tuple[int, int]) -> int:
    return bounds[1] - bounds[0]


class _Progress:
    """The `map_chunk` event of each chunk once it is written, with this rank's totals; rank 0
    also reports its items/s as a metric at the items it has done, so a map kind's throughput
    chart draws while the job runs (the kind's own last report, at `num_items`, ends it)."""

    def __init__(
        self, ctx: TrainContext, result: MapResult, rank_chunks: int | None, num_items: int
    ) -> None:
        self.ctx, self.result, self.rank_chunks = ctx, result, rank_chunks
        self.num_items = num_items
        self.started, self.cpu_started = time.monotonic(), time.process_time()
        self.items_done, self.skipped = 0, 0

    def chunk_done(self, index: int, written: bool, *, items: int) -> None:
        if written:
            self.result.chunks_written.append(index)
        else:
            self.skipped += 1
        self.items_done += items
        elapsed = time.monotonic() - self.started
        rate = self.items_done / elapsed if elapsed > 0 else 0.0
        if written and self.items_done < self.num_items:
            self.ctx.report(self.items_done, {"items_per_s": rate})
        self.ctx.publish(
            "map_chunk",
            {
                "chunk": index,
                "written": written,  # False: it existed already (never overwritten)
                "items": items,
                "items_done": self.items_done,
                "rank_chunks_done": len(self.result.chunks_written) + self.skipped,
                "rank_chunks": self.rank_chunks,
                "items_per_s": rate,
                # this rank's CPU seconds: below the wall time, the device or core is shared
                "cpu_s": time.process_time() - self.cpu_started,
            },
        )


def _any_rank_stopped(ctx: TrainContext, group: Any) -> bool:
    """One collective: every rank learns whether any was asked to stop (SIGTERM)."""
    flag = torch.tensor([1.0 if ctx.stop_flag.requested else 0.0])  # gloo: on the CPU
    if group is not None:
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
    return bool(flag.item() > 0)


def _batch_size(
    options: MapOptions, free_bytes: int, estimate_bytes: Callable[[int], int] | None
) -> int:
    if options.batch_size != "auto":
        return options.batch_size
    if estimate_bytes is None:
        raise ValueError("batch_size auto needs the kind's memory estimate")
    return auto_batch_size(estimate_bytes, free_bytes, upper=options.chunk_size)
