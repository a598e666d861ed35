"""Per-rank progress of a map job from its chunk events, and the endpoint that serves it from
the job's real Redis stream."""

from __future__ import annotations

from typing import Any

import redis
from fastapi.testclient import TestClient
from harness import register_devices
from sqlalchemy.orm import Session

from gpudeck.engine.events import Event, encode
from gpudeck.services.jobs.events import job_stream
from gpudeck.services.jobs.map_ranks import summarize


def _start(rank: int, share: int | None) -> Event:
    data = {"num_chunks": 10, "chunks_done": 2, "strategy": "balanced", "rank_chunks": share,
            "num_items": 80, "output_dir": "/data/datasets/acts/run"}  # fmt: skip
    return Event("map_start", 1, rank, 0.0, data)


def _chunk(rank: int, done: int, share: int | None, items: int) -> Event:
    data = {"chunk": 0, "rank_chunks_done": done, "rank_chunks": share, "items_done": items,
            "items_per_s": 2.0 * done}  # fmt: skip
    return Event("map_chunk", 1, rank, 0.0, data)


def test_each_rank_shows_its_newest_counts_and_never_goes_back() -> None:
    events = [_start(1, 4), _start(0, 4), _chunk(0, 1, 4, 8), _chunk(0, 2, 4, 16),
              _chunk(0, 1, 4, 8),  # re-sent after a reconnect: older, ignored
              Event("metrics", 1, 0, 0.0, {"step": 3})]  # fmt: skip
    summary = summarize(events)
    assert (summary.num_chunks, summary.chunks_done_before, summary.strategy) == (10, 2, "balanced")
    assert [(r.rank, r.chunks_done, r.chunks_total, r.items_done) for r in summary.ranks] == [
        (0, 2, 4, 16),
        (1, 0, 4, 0),  # started, nothing finished yet
    ]
    assert summary.ranks[0].items_per_s == 4.0
    dynamic = summarize([_start(0, None), _chunk(0, 3, None, 24)])
    assert dynamic.ranks[0].chunks_total is None and dynamic.ranks[0].chunks_done == 3
    assert summarize([]).ranks == [] and summarize([]).num_chunks is None


def test_the_totals_count_every_rank_and_the_eta_only_those_still_working() -> None:
    # 10 chunks of 8 items, 2 written before; rank 0 finished its 4, rank 1 has 1 of 4 left
    summary = summarize([_start(0, 4), _start(1, 4), _chunk(0, 4, 4, 32), _chunk(1, 3, 4, 24)])
    assert (summary.num_items, summary.chunks_done, summary.items_done) == (80, 9, 56)
    assert summary.items_per_s == 6.0  # rank 1's alone: rank 0 has nothing left to do
    assert summary.eta_s == 8 / 6.0  # one chunk of 8 items at 6 items/s
    done = summarize([_start(0, 4), _start(1, 4), _chunk(0, 4, 4, 32), _chunk(1, 4, 4, 32)])
    assert done.eta_s == 0.0
    assert summarize([_start(0, 4)]).eta_s is None  # no rate yet
    assert summarize([]).eta_s is None


def _sae_job(client: TestClient, db: Session) -> int:
    register_devices(db)
    body: dict[str, Any] = {"kind": "sae", "config": {}, "devices": [{"index": 0}]}
    created = client.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def test_the_endpoint_reads_the_jobs_stream(
    client: TestClient, db: Session, redis_client: redis.Redis
) -> None:
    job_id = _sae_job(client, db)
    assert client.get(f"/api/jobs/{job_id}/map-progress").json()["ranks"] == []
    for event in [_start(0, 3), _start(1, 3), _chunk(1, 2, 3, 5)]:
        redis_client.xadd(job_stream(job_id), encode(event.type, job_id, event.rank, event.data))
    answer = client.get(f"/api/jobs/{job_id}/map-progress")
    assert answer.status_code == 200, answer.text
    assert answer.json()["ranks"] == [
        {"rank": 0, "chunks_done": 0, "chunks_total": 3, "items_done": 0, "items_per_s": 0.0},
        {"rank": 1, "chunks_done": 2, "chunks_total": 3, "items_done": 5, "items_per_s": 4.0},
    ]
    assert answer.json()["chunks_done"] == 4 and answer.json()["items_per_s"] == 4.0
    assert answer.json()["output_dir"] == "/data/datasets/acts/run"  # the page says where
    assert client.get("/api/jobs/999999/map-progress").status_code == 404
