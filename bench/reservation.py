"""Reservation throughput: 200 concurrent clients each submitting and cancelling jobs against
8 devices on one real `gpudeck api` process and real Postgres.

Prints submissions/s and p50/p99 submit latency (201 and 409 alike), beside a baseline measured
in the same run (GET /api/health: one request and one SQL round trip), and checks from the
clients' side that no device was ever held by two jobs at once.

    .venv/bin/python bench/reservation.py [--clients 200] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field

import httpx
from _server import NODE, BenchServer, bench_server, percentile


@dataclass
class Results:
    latencies_s: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    # device uuid -> [(held_from, held_until)] as the clients observed it
    holds: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))


async def client_loop(
    http: httpx.AsyncClient,
    deadline: float,
    rng: random.Random,
    out: Results,
    think_s: float,
) -> None:
    while time.monotonic() < deadline:
        if think_s:  # paced: each client submits at random times, think_s apart on average
            await asyncio.sleep(rng.expovariate(1 / think_s))
        indices = rng.sample(range(8), rng.choice([1, 2]))
        body = {
            "kind": "sae",
            "config": {"batch_size": 64 * len(indices), "steps": 10},
            "devices": [{"index": i, "node": NODE} for i in indices],
            "queue": False,  # the immediate path: busy devices answer 409 (issue 13 queues)
        }
        started = time.monotonic()
        response = await http.post("/api/jobs", json=body)
        received = time.monotonic()
        out.latencies_s.append(received - started)
        out.statuses[response.status_code] += 1
        if response.status_code == 201:
            job = response.json()
            cancel_sent = time.monotonic()
            await http.post(f"/api/jobs/{job['id']}/cancel")
            # Held at least from the 201's arrival until the cancel was sent.
            for device in job["devices"]:
                out.holds[device["uuid"]].append((received, cancel_sent))


def double_bookings(holds: dict[str, list[tuple[float, float]]]) -> int:
    overlaps = 0
    for intervals in holds.values():
        intervals.sort()
        overlaps += sum(1 for a, b in itertools.pairwise(intervals) if b[0] < a[1])
    return overlaps


def bench_client(server: BenchServer, clients: int) -> httpx.AsyncClient:
    """One connection per client; idle ones close before uvicorn's 5 s keep-alive does, or a
    paced client would write into a connection the server is closing."""
    return httpx.AsyncClient(
        base_url=server.url,
        headers=server.headers,
        limits=httpx.Limits(max_connections=clients, keepalive_expiry=2),
        timeout=60,
    )


async def baseline(server: BenchServer, clients: int, seconds: float) -> float:
    count = 0

    async def loop(http: httpx.AsyncClient, deadline: float) -> None:
        nonlocal count
        while time.monotonic() < deadline:
            await http.get("/api/health")
            count += 1

    async with bench_client(server, clients) as http:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(loop(http, deadline) for _ in range(clients)))
    return count / seconds


async def reservations(
    server: BenchServer, clients: int, seconds: float, think_s: float = 0.0
) -> Results:
    out = Results()
    async with bench_client(server, clients) as http:
        deadline = time.monotonic() + seconds
        await asyncio.gather(
            *(client_loop(http, deadline, random.Random(i), out, think_s) for i in range(clients))
        )
    return out


def report(label: str, results: Results, seconds: float, health_rps: float) -> None:
    submits = len(results.latencies_s)
    rate = submits / seconds
    p50, p99 = (
        percentile(results.latencies_s, 0.5),
        percentile(results.latencies_s, 0.99),
    )
    other = submits - results.statuses[201] - results.statuses[409]
    print(
        f"{label:<34} {rate:7.1f}/s ({rate / health_rps:4.2f}x)  "
        f"201/409/other {results.statuses[201]}/{results.statuses[409]}/{other}  "
        f"p50/p99 {p50 * 1000:.0f}/{p99 * 1000:.0f} ms  "
        f"double bookings {double_bookings(results.holds)}  "
        f"goal (>=200/s, p99<=300 ms): {'met' if rate >= 200 and p99 <= 0.3 else 'missed'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument(
        "--think-s",
        type=float,
        nargs="*",
        default=[0.0, 4.0],
        help="mean pause between a client's submissions; 0: back to back (closed loop)",
    )
    parser.add_argument("--workers", type=int, default=1, help="API processes (gpudeck api)")
    args = parser.parse_args()
    with bench_server(workers=args.workers) as server:
        # The API imports torch for its first estimate in the background: wait for it, so
        # every figure below is steady state.
        httpx.post(f"{server.url}/api/estimate", json={"kind": "sae"}, headers=server.headers,
                   timeout=300)  # fmt: skip
        health_rps = asyncio.run(baseline(server, args.clients, args.seconds / 2))
        print(
            f"{args.clients} clients, {args.seconds:.0f} s per run, 8 simulated devices, "
            f"{args.workers} API process(es)"
        )
        print(f"baseline GET /api/health: {health_rps:.1f} req/s")
        for think_s in args.think_s:
            results = asyncio.run(reservations(server, args.clients, args.seconds, think_s))
            label = "back to back" if think_s == 0 else f"paced, {think_s:g} s mean think time"
            report(label, results, args.seconds, health_rps)


if __name__ == "__main__":
    main()
