"""Telemetry fan-out: 100, 500 and 1,000 WebSocket clients on one `gpudeck api` process, fed by
a real `gpudeck sampler` (8 simulated devices, 1 Hz) through real Redis.

Prints, per client count, the lag from a sample's `sampled_at` to its receipt by the clients
(p50/p99 over every client and sample in the window) and the API process's CPU (cores) and RSS.
Baseline in the same run: a single client. Goal: 1,000 clients, p99 <= 250 ms, < 1 core.
Clients run in 4 processes on the same machine, so their CPU competes with the API's.

    PYTHONPATH=bench .venv/bin/python bench/telemetry_fanout.py [--clients 1 100 500 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

import psutil
from websockets.asyncio.client import connect

CLIENT_PROCESSES = 4
HISTORY_S = 5  # on connect; the figure is about live samples


def client_process(
    url: str, token: str, clients: int, window: Any, ready_q: mp.Queue, out: mp.Queue
) -> None:
    """`clients` connections; once all are up, says so, then records lags inside the window
    the parent sets (`window[0]`..`window[1]`, wall-clock seconds; 0 until set)."""

    async def one(lags: list[float], ready: list[int]) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        uri = f"{url}/ws/telemetry?history_s={HISTORY_S}"
        async with connect(uri, additional_headers=headers, max_size=None) as ws:
            await ws.recv()  # snapshot
            ready.append(1)
            while not window[1] or time.time() < window[1]:
                raw = await ws.recv()
                received = time.time()
                if window[0] and window[0] <= received <= window[1]:
                    sampled = json.loads(raw)["samples"][0]["sampled_at"]
                    lags.append(received - datetime.fromisoformat(sampled).timestamp())

    async def run() -> None:
        lags: list[float] = []
        ready: list[int] = []
        tasks = []
        for _ in range(clients):  # connect gradually, as real dashboards do
            tasks.append(asyncio.create_task(one(lags, ready)))
            await asyncio.sleep(0.005)
        while len(ready) < clients and not any(t.done() for t in tasks):
            await asyncio.sleep(0.05)
        ready_q.put(len(ready))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors = [repr(r) for r in results if isinstance(r, BaseException)]
        out.put((len(ready), lags, errors[:3]))

    asyncio.run(run())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run_round(url: str, token: str, api: psutil.Process, clients: int, seconds: float) -> str:
    procs = min(CLIENT_PROCESSES, clients)
    window = mp.Array("d", [0.0, 0.0])
    ready_q: mp.Queue = mp.Queue()
    out: mp.Queue = mp.Queue()
    ws_url = url.replace("http", "ws", 1)
    workers = [
        mp.Process(
            target=client_process,
            args=(
                ws_url,
                token,
                clients // procs + (i < clients % procs),
                window,
                ready_q,
                out,
            ),
        )
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    for _ in workers:
        ready_q.get(timeout=300)
    start_at = time.time() + 2  # settle
    stop_at = start_at + seconds
    window[0], window[1] = start_at, stop_at
    time.sleep(max(0.0, start_at - time.time()))
    cpu0, t0 = api.cpu_times(), time.monotonic()
    time.sleep(max(0.0, stop_at - time.time()))
    cpu1, t1 = api.cpu_times(), time.monotonic()
    rss_mib = api.memory_info().rss / 2**20
    results = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    errors = [e for r in results for e in r[2]]
    if errors:
        print("client errors:", errors[:3])
    connected = sum(r[0] for r in results)
    lags = [lag for r in results for lag in r[1]]
    cores = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (t1 - t0)
    return (
        f"{clients:>7} {connected:>9} {len(lags):>8} {percentile(lags, 0.5) * 1000:>7.1f} "
        f"{percentile(lags, 0.99) * 1000:>8.1f} {cores:>6.2f} {rss_mib:>8.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 100, 500, 1000])
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    from _server import bench_server  # heavy; not for the client processes

    # Our own Redis database and node name, so another bench's server cannot cross streams.
    redis_url = os.environ.get("GPUDECK_BENCH_REDIS_URL", "redis://127.0.0.1:6379/3")
    env_extra = {
        "GPUDECK_DEVICE_PROVIDER": "simulated",
        "GPUDECK_SIMULATED_DEVICES": "8x80GiB",
        "GPUDECK_REDIS_URL": redis_url,
        "GPUDECK_NODE_NAME": "bench-telemetry",
        "GPUDECK_SAMPLE_INTERVAL_S": "1",
        "GPUDECK_LOG_LEVEL": "warning",
    }
    with bench_server("8x80GiB", extra_env=env_extra) as server:
        api = next(p for p in psutil.Process().children() if "api" in p.cmdline())
        env = {**os.environ, **env_extra, "GPUDECK_DATABASE_URL": server.database_url}
        sampler = subprocess.Popen([sys.executable, "-m", "gpudeck", "sampler"], env=env)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # still run the clean-ups
        try:
            time.sleep(3)
            print(f"one API process, 8 simulated devices at 1 Hz, {args.seconds:.0f} s per round")
            print("clients connected  samples  p50 ms   p99 ms  cores  RSS MiB")
            for clients in args.clients:
                print(
                    run_round(server.url, server.token, api, clients, args.seconds),
                    flush=True,
                )
        finally:
            sampler.terminate()
            sampler.wait(timeout=30)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    main()
