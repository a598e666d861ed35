"""Fan-out internals: bounded per-client queues and the in-memory history."""

from __future__ import annotations

import asyncio
import json
import random
import time

from gpudeck.api.telemetry_hub import Subscription, TelemetryHub
from gpudeck.core.redis import API_TIMEOUT_S, async_client
from gpudeck.telemetry import stream
from gpudeck.telemetry.processes import classify
from gpudeck.telemetry.stream import ManagedPid


def test_a_full_queue_drops_its_oldest_message() -> None:
    async def go() -> None:
        sub = Subscription(maxsize=3)
        for i in range(10):
            sub.offer(str(i))
        assert sub.queue.qsize() == 3 and sub.dropped == 7
        assert [sub.queue.get_nowait() for _ in range(3)] == ["7", "8", "9"]

    asyncio.run(go())


def test_snapshot_holds_the_asked_history_and_live_messages_reach_every_client() -> None:
    async def go() -> None:
        hub = TelemetryHub(None, history_s=60, queue_size=2)  # type: ignore[arg-type]
        for second in range(100):
            hub.publish(second * 1000, json.dumps({"t": second}))
        snapshot = json.loads(hub.snapshot(10))
        assert snapshot["type"] == "snapshot"
        assert [s["t"] for s in snapshot["samples"]] == list(range(90, 100))
        assert len(json.loads(hub.snapshot(3600))["samples"]) == 61  # the ring keeps 60 s
        _, fast = hub.subscribe(10)
        _, slow = hub.subscribe(10)
        hub.publish(100_000, '{"t":100}')
        assert json.loads(fast.queue.get_nowait() or "") == {
            "type": "sample",
            "samples": [{"t": 100}],
        }
        for t in range(101, 110):
            hub.publish(t * 1000, json.dumps({"t": t}))
        assert slow.queue.qsize() == 2 and hub.dropped_total == 8 + 7
        hub.unsubscribe(slow)
        hub.unsubscribe(fast)
        assert not hub.subscriptions and hub.dropped_total == 15

    asyncio.run(go())


def test_children_of_a_rank_count_as_the_job() -> None:
    parents = {500: 400, 400: 300, 300: 1}
    procs = classify([(500, 1), (600, 2)], {300: ManagedPid(9, 0, "sae")}, parents.get)
    seen = [(p.pid, p.managed, p.job_id, p.kind, p.rank) for p in procs]
    # A rank's child is its job's (same kind) but no rank of its own.
    assert seen == [(500, True, 9, "sae", None), (600, False, None, None, None)]


def test_the_hub_stops_at_once_whenever_it_is_stopped(service_urls: tuple[str, str]) -> None:
    """The API's shutdown waits for the hub: it hung for ever when a cancellation fell on a
    redis-py command's reply (see core/tasks.py). Stop 200 readers at random moments."""

    async def one(delay_s: float) -> float:
        hub = TelemetryHub(
            async_client(service_urls[1], timeout_s=API_TIMEOUT_S, block_s=1.0),
            history_s=10,
            nodes_refresh_s=0.0,  # a command every iteration: more moments to be stopped in
        )
        await hub.start()
        await asyncio.sleep(delay_s)
        started = time.monotonic()
        await asyncio.wait_for(hub.stop(), timeout=5)
        await hub.redis.aclose()
        return time.monotonic() - started

    async def go() -> list[float]:
        client = async_client(service_urls[1])
        await client.sadd(stream.NODES_KEY, "stop-test")
        await client.xadd(stream.stream_key("stop-test"), {stream.STREAM_FIELD: "{}"})
        await client.aclose()
        rng = random.Random(0)
        took: list[float] = []
        # 200 stops, 40 hubs at a time: each hub sends a command every iteration, so 200 in
        # one loop made the loop itself the wait (1.3 s at load 8, where 40 take 0.3 s).
        for _ in range(5):
            took += await asyncio.gather(*(one(rng.uniform(0, 1.5)) for _ in range(40)))
        return took

    took = asyncio.run(go())
    assert max(took) < 1.0, sorted(took)[-5:]
