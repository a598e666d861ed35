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
    http: httpx.AsyncClient, deadline: float, rng: random.Random, out: Results
) -> None:
    while time.monotonic() < deadline:
        indices = rng.sample(range(8), rng.choice([1, 2]))
        body = {
            "kind": "sae",
            "config": {"batch_size": 64 * len(indices), "steps": 10},
            "devices": [{"index": i, "node": NODE} for i in indices],
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


async def baseline(server: BenchServer, clients: int, seconds: float) -> float:
    count = 0

    async def loop(http: httpx.AsyncClient, deadline: float) -> None:
        nonlocal count
        while time.monotonic() < deadline:
            await http.get("/api/health")
            count += 1

    async with httpx.AsyncClient(
        base_url=server.url,
        headers=server.headers,
        limits=httpx.Limits(max_connections=clients),
        timeout=60,
    ) as http:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(loop(http, deadline) for _ in range(clients)))
    return count / seconds


async def reservations(server: BenchServer, clients: int, seconds: float) -> Results:
    out = Results()
    async with httpx.AsyncClient(
        base_url=server.url,
        headers=server.headers,
        limits=httpx.Limits(max_connections=clients),
        timeout=60,
    ) as http:
        deadline = time.monotonic() + seconds
        await asyncio.gather(
            *(client_loop(http, deadline, random.Random(i), out) for i in range(clients))
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    with bench_server() as server:
        health_rps = asyncio.run(baseline(server, args.clients, args.seconds / 2))
        results = asyncio.run(reservations(server, args.clients, args.seconds))
    submits = len(results.latencies_s)
    rate = submits / args.seconds
    p50, p99 = percentile(results.latencies_s, 0.5), percentile(results.latencies_s, 0.99)
    print(f"clients                 {args.clients}")
    print(f"baseline GET /api/health {health_rps:8.1f} req/s")
    ratio = rate / health_rps
    print(f"submissions              {rate:8.1f} /s  ({ratio:.2f}x the baseline's request rate)")
    print(
        f"  201 / 409 / other      {results.statuses[201]} / {results.statuses[409]} / "
        f"{submits - results.statuses[201] - results.statuses[409]}"
    )
    print(f"submit latency p50/p99   {p50 * 1000:.0f} / {p99 * 1000:.0f} ms")
    print(f"double bookings seen     {double_bookings(results.holds)}")
    print(
        f"goal: >= 200 submissions/s and p99 <= 300 ms -> "
        f"{'met' if rate >= 200 and p99 <= 0.3 else 'missed'}"
    )


if __name__ == "__main__":
    main()
