"""Map-job scaling: the `activations` kind on 1, 2 and 4 CPU ranks, one thread each.

    cd backend && /work/main/.venv/bin/python ../bench/map_scaling.py [--strategy balanced]

`make gpu-check` (bench/gpucheck/map_jobs.py) runs the same functions on CUDA ranks, with a
larger model (`Shape`) and `device_type="cuda"`.

A random GPT-2 (4 layers, d_model 256, 4 heads) built in a temporary directory; N sequences of
128 token ids; the hook is block 3's output, all positions. Items/s is N over the map phase
(the first rank's `map_start` to the last `map_chunk`), so model loading and the final
consolidation are left out; efficiency is items/s per rank over 1 rank's. Goal: 2 ranks >=
1.7x one rank. The ranks need that many idle cores: the figure is only as honest as the
machine is quiet: the script prints the load average, interleaves the rank counts over several
rounds and takes medians, and also reports items per CPU-second summed over the ranks, which
a loaded machine distorts less, and a baseline: the same forward passes in as many plain
processes with no engine (`plain procs`), i.e. what the machine allows at that moment;
`map/plain` is the engine's share of that.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gpudeck.engine import kinds
from gpudeck.engine.contract import DeviceType, JobLaunch
from gpudeck.engine.launch import free_port, threads_per_rank
from gpudeck.engine.rank import run_rank


@dataclass(frozen=True)
class Shape:
    """The random GPT-2 and its token-id sequences; the hook is the last block's output."""

    layers: int = 4
    width: int = 256  # d_model
    heads: int = 4
    context: int = 128  # tokens per sequence
    vocab: int = 1000

    @property
    def hook(self) -> str:
        return f"transformer.h.{self.layers - 1}"

    def describe(self) -> str:
        return (
            f"GPT-2 {self.layers} layers, d_model {self.width}, {self.heads} heads, "
            f"context {self.context}"
        )


CPU_SHAPE = Shape()


def rank_threads(device_type: DeviceType, world: int) -> int:
    """CPU ranks: one thread each (the figure is per core); CUDA ranks: the launcher's split."""
    return 1 if device_type == "cpu" else threads_per_rank(world)


def _timed(phases: dict[str, float], name: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - began

    return wrapper


def _instrument(phases: dict[str, float]) -> None:
    """Time the engine's parts in this rank: the kind's forward passes (`compute`), writing
    chunks (`write`: safetensors, fsync, link), publishing events (`publish`)."""
    from gpudeck.engine.context import TrainContext
    from gpudeck.engine.map import output
    from gpudeck.kinds.activations import extract

    output.write_chunk = _timed(phases, "write", output.write_chunk)  # type: ignore[method-assign]
    TrainContext.publish = _timed(phases, "publish", TrainContext.publish)  # type: ignore[method-assign]
    run_map = extract.run_map

    def timed_run_map(ctx: Any, **kwargs: Any) -> Any:
        kwargs["process"] = _timed(phases, "compute", kwargs["process"])
        return _timed(phases, "map", run_map)(ctx, **kwargs)

    extract.run_map = timed_run_map  # type: ignore[assignment]


def _rank_main(launch_json: str, rank: int) -> None:
    place = JobLaunch.from_json(launch_json).rank(rank)
    os.environ.update(place.environment())
    from gpudeck.kinds.activations import (
        KIND,
    )  # registered by entry point once installed

    kinds.registry()[KIND.name] = KIND
    phases: dict[str, float] = {}
    _instrument(phases)
    run_rank(place)
    Path(place.launch.run_dir, f"phases{rank}.json").write_text(json.dumps(phases))


def build(data_dir: Path, num: int, shape: Shape = CPU_SHAPE) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=shape.layers, n_embd=shape.width, n_head=shape.heads, vocab_size=shape.vocab,
        n_positions=shape.context, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(data_dir / "models" / "gpt2")
    (data_dir / "datasets").mkdir(parents=True)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, shape.vocab, size=(num, shape.context), dtype=np.int64)
    np.save(data_dir / "datasets" / "ids.npy", ids)


def run(
    data_dir: Path,
    world: int,
    num: int,
    strategy: str,
    chunk: int,
    batch: int,
    *,
    shape: Shape = CPU_SHAPE,
    device_type: DeviceType = "cpu",
) -> tuple[float, float, dict[str, float]]:
    """(items/s, items per CPU-second summed over the ranks) of the map phase, and the ranks'
    mean seconds per phase (compute, write, publish, and `map`: all of run_map). One rank per
    device, devices 0..world-1 (CUDA: each rank sees only its own, as under the worker). The
    run's output is removed afterwards."""
    run_dir = Path(tempfile.mkdtemp(dir=data_dir))
    config: dict[str, Any] = {
        "model": "gpt2",
        "input": "ids.npy",
        "hook": shape.hook,
        "context_length": shape.context,
        "output": f"out-{world}-{run_dir.name}",
        "map": {"strategy": strategy, "chunk_size": chunk, "batch_size": batch},
    }
    launch = JobLaunch(
        job_id=world,
        kind="activations",
        config=config,
        run_dir=str(run_dir),
        data_dir=str(data_dir),
        checkpoint_dir=str(run_dir / "ckpt"),
        device_type=device_type,
        device_indices=tuple(range(world)),
        master_port=free_port(),
        num_threads=rank_threads(device_type, world),
    ).to_json()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_rank_main, args=(launch, r)) for r in range(world)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    assert all(p.exitcode == 0 for p in procs), f"a rank failed: see {run_dir}"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    start = min(float(e["ts"]) for e in events if e["type"] == "map_start")
    chunks = [e for e in events if e["type"] == "map_chunk"]
    end = max(float(e["ts"]) for e in chunks)
    cpu = {e["rank"]: json.loads(e["data"])["cpu_s"] for e in chunks}  # each rank's last
    per_rank = [json.loads((run_dir / f"phases{r}.json").read_text()) for r in range(world)]
    phases = {k: statistics.mean(p.get(k, 0.0) for p in per_rank) for k in PHASES}
    shutil.rmtree(data_dir / "datasets" / config["output"])  # GBs on a GPU: one run at a time
    return num / (end - start), num / sum(cpu.values()), phases


PHASES = ("compute", "write", "publish", "map")


def _spin_worker(loops: int, go: Any, out: Any) -> None:
    """Pure Python arithmetic: no memory traffic, no library threads, one core's worth."""
    go.wait()
    began = time.perf_counter()
    total = 0
    for i in range(loops):
        total += i * i % 7
    out.put(time.perf_counter() - began)


def spin(procs: int, loops: int = 20_000_000) -> float:
    """Loops/s of `procs` processes each spinning `loops // procs`: how much CPU the machine
    gives that many processes right now (2 idle cores: 2x one process)."""
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    workers = [
        ctx.Process(target=_spin_worker, args=(loops // procs, go, out)) for _ in range(procs)
    ]
    for worker in workers:
        worker.start()
    time.sleep(1.0)  # started (a spawn without torch is quick)
    go.set()
    times = [out.get() for _ in workers]
    for worker in workers:
        worker.join()
    return loops / max(times)


def load_plain(
    data_dir: Path, shape: Shape, device: torch.device, start: int, stop: int
) -> tuple[Any, Any, torch.Tensor]:
    """The model as the kind loads it (on `device`), its hooked block, and items [start, stop)."""
    from gpudeck.kinds.activations.extract import load_model

    model, _ = load_model(data_dir / "models" / "gpt2", "float32", device)
    ids = torch.from_numpy(np.load(data_dir / "datasets" / "ids.npy")[start:stop])
    return model, model.get_submodule(shape.hook), ids


def plain_passes(model: Any, module: Any, ids: torch.Tensor, batch: int) -> None:
    """The kind's forward passes with no engine: to the hook (where the pass stops), every
    position's row, into host memory; no chunk assembled, nothing written."""
    from gpudeck.kinds.activations.extract import select_rows
    from gpudeck.kinds.activations.hooks import capture

    device = next(model.parameters()).device
    with torch.inference_mode():
        for first in range(0, len(ids), batch):
            inputs = {"input_ids": ids[first : first + batch].to(device)}
            acts = capture(model, module, "output", inputs)
            mask = torch.ones(acts.shape[:2], dtype=torch.bool, device=device)
            select_rows(acts, mask, "all").cpu()


def _plain_worker(data_dir: Path, start: int, stop: int, batch: int, go: Any, out: Any) -> None:
    torch.set_num_threads(1)
    model, module, ids = load_plain(data_dir, CPU_SHAPE, torch.device("cpu"), start, stop)
    go.wait()
    began, cpu_began = time.perf_counter(), time.process_time()
    plain_passes(model, module, ids, batch)
    out.put((time.perf_counter() - began, time.process_time() - cpu_began))


def plain(data_dir: Path, procs: int, num: int, batch: int) -> tuple[float, float]:
    """Items/s of `procs` independent processes sharing the items (what the machine allows),
    and their items per CPU-second (what the forward passes cost, whatever the load)."""
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    bounds = [(num * p // procs, num * (p + 1) // procs) for p in range(procs)]
    workers = [
        ctx.Process(target=_plain_worker, args=(data_dir, a, b, batch, go, out)) for a, b in bounds
    ]
    for worker in workers:
        worker.start()
    time.sleep(20)  # every process has loaded its model (generous on a loaded machine)
    go.set()
    times = [out.get() for _ in workers]
    for worker in workers:
        worker.join()
    return num / max(t[0] for t in times), num / sum(t[1] for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=384)
    parser.add_argument("--strategy", default="balanced")
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeat", type=int, default=3, help="rounds, rank counts interleaved")
    args = parser.parse_args()
    load_before = os.getloadavg()
    wall: dict[int, list[float]] = {w: [] for w in args.ranks}
    per_cpu: dict[int, list[float]] = {w: [] for w in args.ranks}
    baseline: dict[int, list[float]] = {w: [] for w in args.ranks}
    spins: dict[int, list[float]] = {w: [] for w in args.ranks}
    plain_cpu: dict[int, list[float]] = {w: [] for w in args.ranks}
    phases: dict[int, list[dict[str, float]]] = {w: [] for w in args.ranks}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        build(data_dir, args.items)
        for _ in range(args.repeat):  # interleaved, so a burst of load hits every count alike
            for world in args.ranks:
                rate, cpu_rate, times = run(data_dir, world, args.items, args.strategy,
                                            args.chunk, args.batch)  # fmt: skip
                wall[world].append(rate)
                per_cpu[world].append(cpu_rate)
                phases[world].append(times)
                plain_rate, plain_cpu_rate = plain(data_dir, world, args.items, args.batch)
                baseline[world].append(plain_rate)
                plain_cpu[world].append(plain_cpu_rate)
                spins[world].append(spin(world))
    print(
        f"{CPU_SHAPE.describe()}, {args.items} sequences, "
        f"chunk {args.chunk}, batch {args.batch}, fp32, cpu, 1 thread per rank, "
        f"{os.cpu_count()} cores, median of {args.repeat} interleaved rounds"
    )
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print(
        f"{'ranks':>5}  {'strategy':<11} {'items/s':>8} {'vs 1 rank':>10} {'efficiency':>10}"
        f"   {'items/CPU-s':>11} {'vs 1 rank':>9}   {'plain procs':>11} {'vs 1':>6}"
        f" {'map/plain':>9}"
    )
    rates = {w: statistics.median(v) for w, v in wall.items()}
    cpu_rates = {w: statistics.median(v) for w, v in per_cpu.items()}
    plains = {w: statistics.median(v) for w, v in baseline.items()}
    first = args.ranks[0]
    for world in args.ranks:
        speedup = rates[world] / rates[first] * first
        print(
            f"{world:>5}  {args.strategy:<11} {rates[world]:8.1f} {speedup:9.2f}x "
            f"{speedup / world:10.0%}   {cpu_rates[world]:11.1f} "
            f"{cpu_rates[world] / cpu_rates[first]:8.2f}x   {plains[world]:11.1f} "
            f"{plains[world] / plains[first] * first:5.2f}x {rates[world] / plains[world]:8.2f}x"
        )
    spin_rates = {w: statistics.median(v) for w, v in spins.items()}
    plain_cpus = {w: statistics.median(v) for w, v in plain_cpu.items()}
    print(f"\n{'ranks':>5}  {'CPU spin':>9} {'vs 1':>6}   {'CPU/item map/plain':>18}   per rank, "
          "seconds: compute  write  publish  other (waits, barriers, claims)")  # fmt: skip
    for world in args.ranks:
        med = {k: statistics.median(p[k] for p in phases[world]) for k in PHASES}
        other = med["map"] - med["compute"] - med["write"] - med["publish"]
        spin_ratio = spin_rates[world] / spin_rates[first]
        cpu_ratio = plain_cpus[world] / cpu_rates[world]  # > 1: the engine costs more CPU
        print(
            f"{world:>5}  {spin_rates[world] / 1e6:8.1f}M {spin_ratio:5.2f}x   {cpu_ratio:17.2f}x"
            f"   {'':>19}{med['compute']:7.2f} {med['write']:6.2f} {med['publish']:8.3f}"
            f"  {other:6.2f}"
        )
    if 1 in rates and 2 in rates:
        verdict = "met" if rates[2] / rates[1] >= 1.7 else "missed"
        print(f"goal: 2 ranks >= 1.7x 1 rank -> {rates[2] / rates[1]:.2f}x, {verdict}; "
              f"the machine at the same moment: plain processes {plains[2] / plains[1]:.2f}x, "
              f"CPU spin {spin_rates[2] / spin_rates[1]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
