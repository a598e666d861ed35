"""Scale on paper, measured in simulation (issue 17): 100 nodes x 8 devices.

    PYTHONPATH=backend .venv/bin/python bench/scale.py pass    [--waiting 10000]
    PYTHONPATH=backend .venv/bin/python bench/scale.py stream  [--nodes 100 --seconds 10]
    PYTHONPATH=backend .venv/bin/python bench/scale.py fanout  [--nodes 100 --clients 1 10 50]

- pass: the scheduler's pass (services.queue.plan.plan, deciding only, as `gpudeck scheduler`
  runs it on wake-ups) and the explained pass (queue view, submit summary) over 10,000 waiting
  jobs on 100 nodes x 8 devices; baseline: the same queue on 8 nodes x 8 devices, same run.
- stream: the real sampler (telemetry.sampler.Sampler with the real NVML adapter) of 100 nodes,
  each over a fake libnvidia-ml (tests/telemetry/fake_nvml.py) of 8 GPUs with two processes
  each, publishing into a real Redis: bytes and commands per second at the 1 Hz sample rate
  (Redis's own INFO counters), the stream memory kept for the history, and the tick's CPU per
  node; baseline: one node.
- fanout: one real `gpudeck api` process feeding N dashboard WebSockets while the 100 nodes'
  samplers publish at 1 Hz (each client gets every node's sample): the API's CPU per client and
  the lag; the design limit is the clients one core feeds.

GPUDECK_BENCH_REDIS_URL / GPUDECK_BENCH_DATABASE_URL choose the services (fanout needs both).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pynvml

from gpudeck.services.queue.plan import Dev, Holding, Policy, Waiting, plan

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "backend" / "tests"))
PER_NODE = 8


# ----- the scheduler's pass -----------------------------------------------------------------


def _queue(nodes: int, waiting_n: int) -> tuple[list[Dev], list[Holding], list[Waiting], dict]:
    rng = random.Random(3)
    names = [f"n{n}" for n in range(nodes)]
    devices = [Dev(f"n{n}", f"n{n}-{i}", i, holder=1) for n in range(nodes) for i in range(8)]
    holding = [Holding(1, "u0", tuple(d.key for d in devices), 5000.0)]
    waiting = [
        Waiting(
            id=10 + i,
            owner=f"u{rng.randrange(8)}",
            node=rng.choice(names),
            world_size=rng.choice([1, 1, 2, 2, 4, 8]),
            submitted_at=float(i),
            time_limit_s=float(rng.randrange(60, 86400)),
            priority=rng.choice([0, 0, 0, 1, -1]),
        )
        for i in range(waiting_n)
    ]
    usage = {f"u{i}": rng.random() * 1e5 for i in range(8)}
    return devices, holding, waiting, usage


def bench_pass(waiting_n: int, repeats: int) -> None:
    cases = {
        f"{n} nodes x 8, {mode}": (_queue(n, waiting_n), explain)
        for n in (100, 8)
        for mode, explain in (
            ("deciding (scheduler)", False),
            ("explained (views)", True),
        )
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):  # interleaved: the machine's load weighs on each case alike
        for name, ((devices, holding, waiting, usage), explain) in cases.items():
            started = time.perf_counter()
            plan(
                devices,
                holding,
                waiting,
                now=1000.0,
                usage=usage,
                policy=Policy(),
                explain=explain,
            )
            times[name].append(time.perf_counter() - started)
    print(f"one pass, {waiting_n} waiting jobs, every device held, median of {repeats}")
    for mode in ("deciding (scheduler)", "explained (views)"):
        big = statistics.median(times[f"100 nodes x 8, {mode}"])
        small = statistics.median(times[f"8 nodes x 8, {mode}"])
        print(
            f"  {mode:22s} 800 devices {big * 1e3:6.1f} ms; baseline 64 devices "
            f"{small * 1e3:6.1f} ms ({big / small:.2f}x)"
        )


# ----- the samplers' stream into Redis ------------------------------------------------------


class _NoStore:
    """The sampler's database side, left out: this figure is about Redis."""

    def placements(self, node: str) -> dict[str, Any]:
        return {}

    def save_inventory(self, node: str, source: Any, devices: Any) -> None:
        return None

    def record_peaks(self, peaks: Any) -> None:
        return None


class _Node:
    """One node's sampler over its own fake NVML library (swapped in before each tick)."""

    def __init__(self, index: int, redis_client: Any) -> None:
        from telemetry.fake_nvml import GIB, FakeGpu, FakeNvmlLib

        from gpudeck.telemetry.nvml import NvmlProvider
        from gpudeck.telemetry.sampler import Sampler

        gpus = [
            FakeGpu(
                uuid=f"GPU-{index:03d}{i:05d}-0000-0000-0000-000000000000",
                memory_used=40 * GIB,
                util_gpu=90,
                compute=[(10_000 + 10 * i, 20 * GIB), (10_001 + 10 * i, 20 * GIB)],
            )
            for i in range(PER_NODE)
        ]
        self.lib = FakeNvmlLib(gpus)
        self.use()
        self.sampler = Sampler(
            NvmlProvider(),
            node=f"node-{index:03d}",
            redis_client=redis_client,
            store=_NoStore(),
            interval_s=1.0,
        )
        self.sampler._inventory_at = float("inf")  # the inventory goes to the database: not here

    def use(self) -> None:
        pynvml.nvmlLib = self.lib
        pynvml._nvmlGetFunctionPointer_cache = {}
        pynvml._nvmlLib_refcount = 1

    def tick(self) -> None:
        self.use()
        self.sampler.tick()


def _redis(db: int) -> Any:
    from gpudeck.core.redis import sync_client

    base = os.environ.get("GPUDECK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/3")
    return sync_client(base.rsplit("/", 1)[0] + f"/{db}")


def _counters(r: Any) -> tuple[int, int, int]:
    stats, memory = r.info("stats"), r.info("memory")
    return (
        int(stats["total_net_input_bytes"]),
        int(stats["total_commands_processed"]),
        int(memory["used_memory"]),
    )


def _measure_rounds(nodes: list[_Node], r: Any, rounds: int) -> dict[str, float]:
    """Rounds of one tick per node (one second of cluster time each), as fast as they go."""
    for node in nodes:
        node.tick()  # warm: first XADD creates the stream
    in0, cmd0, _ = _counters(r)
    cpu: list[float] = []
    for _ in range(rounds):
        for node in nodes:
            started = time.process_time()
            node.tick()
            cpu.append(time.process_time() - started)
    in1, cmd1, mem1 = _counters(r)
    nodes[0].use()
    payload = len(nodes[0].sampler.tick().model_dump_json())
    return {
        "bytes_per_s": (in1 - in0) / rounds,
        "commands_per_s": (cmd1 - cmd0) / rounds,
        "entries_per_s": float(len(nodes)),
        "payload_bytes": float(payload),
        "tick_cpu_ms": statistics.median(cpu) * 1e3,
        "used_memory": float(mem1),
    }


def bench_stream(node_count: int, seconds: int) -> None:
    r = _redis(2)
    r.flushdb()
    one = _measure_rounds([_Node(0, r)], r, seconds)
    r.flushdb()
    base_mem = _counters(r)[2]
    nodes = [_Node(i, r) for i in range(node_count)]
    many = _measure_rounds(nodes, r, seconds)
    per_entry = (many["used_memory"] - base_mem) / (node_count * (seconds + 2))
    maxlen = nodes[0].sampler.maxlen
    r.flushdb()
    print(f"sampler stream into Redis, 1 Hz, {PER_NODE} fake NVML devices per node")
    for name, m in ((f"{node_count} nodes", many), ("baseline 1 node", one)):
        print(
            f"  {name:16s} {m['bytes_per_s'] / 1024:8.1f} KiB/s in, "
            f"{m['entries_per_s']:5.0f} stream entries/s, {m['commands_per_s']:6.0f} commands/s; "
            f"sample {m['payload_bytes'] / 1024:.1f} KiB; tick CPU {m['tick_cpu_ms']:.2f} ms/node"
        )
    ratio = many["bytes_per_s"] / one["bytes_per_s"]
    print(f"  ratio {node_count} nodes / 1 node: {ratio:.1f}x bytes")
    history = per_entry * maxlen * node_count / 2**20
    print(
        f"  Redis memory per stream entry ~{per_entry / 1024:.1f} KiB; the history kept "
        f"({maxlen} entries per node) ~{history:.0f} MiB for {node_count} nodes"
    )


# ----- WebSocket fan-out --------------------------------------------------------------------


def bench_fanout(node_count: int, clients: list[int], seconds: float) -> None:
    import psutil
    from _server import bench_server
    from telemetry_fanout import run_round

    redis_url = os.environ.get("GPUDECK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/3")
    extra = {"GPUDECK_REDIS_URL": redis_url, "GPUDECK_LOG_LEVEL": "warning"}
    r = _redis(int(redis_url.rsplit("/", 1)[1]))
    with bench_server("8x80GiB", extra_env=extra) as server:
        api = next(p for p in psutil.Process().children() if "api" in p.cmdline())
        nodes = [_Node(i, r) for i in range(node_count)]
        stop = threading.Event()

        def publish() -> None:  # every node's sampler at 1 Hz, as 100 machines would
            while not stop.is_set():
                started = time.monotonic()
                for node in nodes:
                    node.tick()
                stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))

        thread = threading.Thread(target=publish, daemon=True)
        thread.start()
        try:
            time.sleep(3)
            print(f"one API process, {node_count} nodes x {PER_NODE} devices at 1 Hz")
            print("clients connected  samples  p50 ms   p99 ms  cores  RSS MiB")
            for n in clients:
                print(run_round(server.url, server.token, api, n, seconds), flush=True)
        finally:
            stop.set()
            thread.join(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pass")
    p.add_argument("--waiting", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=9)
    s = sub.add_parser("stream")
    s.add_argument("--nodes", type=int, default=100)
    s.add_argument("--seconds", type=int, default=10)
    f = sub.add_parser("fanout")
    f.add_argument("--nodes", type=int, default=100)
    f.add_argument("--clients", type=int, nargs="+", default=[1, 10, 50])
    f.add_argument("--seconds", type=float, default=15)
    args = parser.parse_args()
    if args.what == "pass":
        bench_pass(args.waiting, args.repeats)
    elif args.what == "stream":
        bench_stream(args.nodes, args.seconds)
    else:
        bench_fanout(args.nodes, args.clients, args.seconds)


if __name__ == "__main__":
    import multiprocessing as mp

    mp.set_start_method("spawn")
    sys.path.insert(0, str(BENCH))
    main()
