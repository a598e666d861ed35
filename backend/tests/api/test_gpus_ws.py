"""WS /ws/telemetry through a real uvicorn server, a real sampler and real Redis."""

from __future__ import annotations

import base64
import gc
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import redis
import uvicorn
from fastapi import FastAPI
from harness import TEST_NODE, free_port
from sqlalchemy.orm import Session, sessionmaker
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.sync.client import connect

from gpudeck.api.telemetry_hub import QUEUE_SIZE, TelemetryHub
from gpudeck.core.config import Settings, SimulatedDeviceSpec
from gpudeck.main import create_app
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry import stream
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.schema import TelemetryMessage
from gpudeck.telemetry.simulated import SimulatedProvider


@contextmanager
def serve(settings: Settings) -> Iterator[tuple[str, FastAPI]]:
    port = free_port()
    app = create_app(settings.model_copy(update={"port": port}))
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    assert httpx.get(f"{url}/api/health").status_code == 200
    try:
        yield url.replace("http", "ws", 1), app
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@contextmanager
def running_sampler(
    r: redis.Redis, sessions: sessionmaker[Session], interval_s: float
) -> Iterator[Sampler]:
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("8x80GiB"), TEST_NODE, interval_s)
    sampler = Sampler(
        provider,
        node=TEST_NODE,
        redis_client=r,
        store=DatabaseSamplerStore(sessions),
        interval_s=interval_s,
    )
    stop = threading.Event()
    thread = threading.Thread(target=sampler.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield sampler
    finally:
        stop.set()
        thread.join(timeout=10)


def receive(ws: Any) -> TelemetryMessage:
    return TelemetryMessage.model_validate_json(ws.recv(timeout=10))


def test_a_client_gets_history_then_live_samples_from_the_sampler(
    settings: Settings,
    admin_token: str,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    history_sampler = running_sampler(redis_client, session_factory, interval_s=0.2)
    with history_sampler, serve(settings) as (base, _):
        time.sleep(1.1)  # some history first
        headers = {"Authorization": f"Bearer {admin_token}"}
        with connect(f"{base}/ws/telemetry?history_s=60", additional_headers=headers) as ws:
            snapshot = receive(ws)
            assert snapshot.type == "snapshot" and len(snapshot.samples) >= 3
            assert all(s.node == TEST_NODE and s.source == "simulated" for s in snapshot.samples)
            times = [s.sampled_at for s in snapshot.samples]
            assert times == sorted(times)
            live = [receive(ws) for _ in range(4)]
    assert all(m.type == "sample" and len(m.samples) == 1 for m in live)
    live_times = [m.samples[0].sampled_at for m in live]
    assert live_times == sorted(live_times) and live_times[0] > times[-1]  # no gap, no repeat
    assert len(live[0].samples[0].devices) == 8


def test_a_client_that_stops_reading_costs_a_bounded_amount_of_server_memory(
    settings: Settings, admin_token: str, redis_client: redis.Redis
) -> None:
    pad = "x" * 200_000
    frames = 150  # 30 MB in all
    with serve(settings) as (base, app):
        hub: TelemetryHub = app.state.telemetry_hub
        redis_client.sadd(stream.NODES_KEY, TEST_NODE)
        stalled = stalled_client(base, admin_token)
        headers = {"Authorization": f"Bearer {admin_token}"}
        with connect(f"{base}/ws/telemetry?history_s=0", additional_headers=headers) as fast:
            receive_raw(fast)  # snapshot
            wait_for(lambda: len(hub.subscriptions) == 2)
            wait_for(lambda: stream.stream_key(TEST_NODE) in hub.following)
            for seq in range(frames):
                payload = json.dumps({"node": TEST_NODE, "seq": seq, "pad": pad})
                redis_client.xadd(stream.stream_key(TEST_NODE), {stream.STREAM_FIELD: payload})
            wait_for(lambda: hub.frames_total >= frames)
            # The reader keeps up; the stalled client's frames are dropped, oldest first (what
            # is not dropped sits in its queue, the transport's buffer or the kernel's).
            wait_for(lambda: max(s.dropped for s in hub.subscriptions) >= frames // 2)
            assert all(s.queue.qsize() <= QUEUE_SIZE for s in hub.subscriptions)
            assert max(write_buffers()) < 2 * len(pad) + 256 * 1024
            seqs: list[int] = []  # a client that reads again gets the newest frames, in order
            while not seqs or seqs[-1] != frames - 1:
                seqs.append(receive_raw(fast)["samples"][0]["seq"])
            assert seqs == sorted(seqs)
        stalled.close()


def stalled_client(base: str, token: str) -> socket.socket:
    """Completes the handshake request and then never reads a byte."""
    host, port = base.removeprefix("ws://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws/telemetry?history_s=0 HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    return sock


def receive_raw(ws: Any) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(ws.recv(timeout=10))
    return message


def write_buffers() -> list[int]:
    """Bytes waiting in each live WebSocket transport of this process (the server's side)."""
    sizes = [0]
    for o in gc.get_objects():
        try:
            # isinstance itself raises ReferenceError on a weak proxy whose referent is gone.
            if isinstance(o, WebSocketsSansIOProtocol) and not o.transport.is_closing():
                sizes.append(o.transport.get_write_buffer_size())
        except (AttributeError, ReferenceError):
            continue  # a transport of an earlier, closed connection
    return sizes


def wait_for(condition: Any, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("condition not met in time")
        time.sleep(0.02)
