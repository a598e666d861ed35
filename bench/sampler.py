"""Sampler cost per sample per device with the simulated provider, against real Redis and
PostgreSQL. Goal: at most 1 ms of framework overhead per device.

Prints, for 8 and 64 devices: the whole tick (placements query, PID hash read, readings,
schema + JSON, one pipelined XADD, inventory check) and the in-process part alone (readings,
schema and JSON), each per device; baseline: one Redis PING round trip.

    .venv/bin/python bench/sampler.py [--samples 300]
    (GPUDECK_BENCH_DATABASE_URL / GPUDECK_BENCH_REDIS_URL choose the services; the database
    must be migrated, e.g. by `gpudeck migrate`.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.core.redis import sync_client
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry import stream
from gpudeck.telemetry.provider import SampleContext
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.schema import NodeSample
from gpudeck.telemetry.simulated import SimulatedProvider

NODE = "bench-sampler"


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def per(ordered: list[float], q: float, devices: int) -> float:
    """The q-quantile of sorted durations, in ms per device."""
    return ordered[int(q * (len(ordered) - 1))] * 1000 / devices


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()
    db_url = os.environ.get(
        "GPUDECK_BENCH_DATABASE_URL",
        "postgresql+psycopg://postgres@127.0.0.1:5432/gpudeck_bench",
    )
    r = sync_client(os.environ.get("GPUDECK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/3"))
    engine = make_engine(db_url, pool_size=1)
    ping = statistics.median(timed(r.ping, args.samples)) * 1000
    print(f"baseline: Redis PING round trip {ping:.3f} ms (median)")
    print("devices  tick ms/device (p50, p99)  in-process ms/device (p50, p99)")
    try:
        for count in (8, 64):
            provider = SimulatedProvider(SimulatedDeviceSpec.parse(f"{count}x80GiB"), NODE)
            sampler = Sampler(
                provider,
                node=NODE,
                redis_client=r,
                store=DatabaseSamplerStore(make_sessionmaker(engine)),
            )
            sampler.tick()  # warm: registers the inventory, opens connections

            def in_process(provider: SimulatedProvider = provider) -> str:
                devices = provider.read(SampleContext())
                return NodeSample(
                    node=NODE,
                    source="simulated",
                    sampled_at=datetime.now(UTC),
                    interval_s=1.0,
                    devices=devices,
                ).model_dump_json()

            tick = sorted(timed(sampler.tick, args.samples))
            local = sorted(timed(in_process, args.samples))
            print(
                f"{count:>7}  {per(tick, 0.5, count):>8.3f} {per(tick, 0.99, count):>8.3f}"
                f"               {per(local, 0.5, count):>8.3f} {per(local, 0.99, count):>8.3f}"
            )
    finally:
        r.delete(stream.stream_key(NODE), stream.health_key(NODE))
        r.srem(stream.NODES_KEY, NODE)
        engine.dispose()


if __name__ == "__main__":
    main()
