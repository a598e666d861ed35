"""The event wire format: what a rank encodes is what the worker and the WebSocket decode."""

from __future__ import annotations

from gpudeck.engine.events import WORKER_RANK, decode, encode


def test_an_event_reads_back_as_it_was_sent() -> None:
    fields = encode("metrics", 7, 1, {"step": 3, "metrics": {"loss": 0.5}}, ts=12.5)
    assert fields == {
        "type": "metrics",
        "job_id": "7",
        "rank": "1",
        "ts": "12.500000",
        "data": '{"step": 3, "metrics": {"loss": 0.5}}',
    }
    event = decode(fields)
    assert (event.type, event.job_id, event.rank, event.ts) == ("metrics", 7, 1, 12.5)
    assert event.data == {"step": 3, "metrics": {"loss": 0.5}} and event.intact
    # The dashboard's frame: no job id, numbers as numbers.
    assert event.frame() == {"type": "metrics", "rank": 1, "ts": 12.5, "data": event.data}


def test_the_workers_own_events_say_rank_minus_one() -> None:
    assert decode(encode("status", 2, WORKER_RANK, {"status": "running"})).rank == -1


def test_an_undecodable_payload_is_marked_and_reads_as_empty() -> None:
    for data in ("{not json", "[1, 2]"):
        event = decode({"type": "log", "job_id": "1", "rank": "0", "ts": "1", "data": data})
        assert not event.intact and event.data == {}
    assert decode({}).frame() == {"type": "", "rank": 0, "ts": 0.0, "data": {}}
