"""A sweep is estimated once per distinct memory-relevant config: 1,000 learning rates (or
a dotted field of a nested model) trace once, not 1,000 times; k, which sizes the top-k's
tensors, once per value. Traces are counted by wrapping the trace function."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gpudeck.kinds.sae import memory
from gpudeck.kinds.sae.memory_trace import TraceResult, TraceSpec

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}


@pytest.fixture
def traces(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[TraceSpec]]:
    # The app's warm-up thread traces the default config at start: let it end first, so its
    # trace is neither counted here nor competing with the sweep's request for the CPU.
    for thread in threading.enumerate():
        if thread.name == "warm-up":
            thread.join()
    memory.clear_cache()
    seen: list[TraceSpec] = []
    real = memory.trace

    def counting(spec: TraceSpec) -> TraceResult:
        seen.append(spec)
        return real(spec)

    monkeypatch.setattr(memory, "trace", counting)
    yield seen
    memory.clear_cache()


def sweep(client: TestClient, grid: dict[str, list[Any]]) -> dict[str, Any]:
    body = {"job": {"kind": "sae", "config": SAE, "count": 1}, "parameters": {"grid": grid}}
    created = client.post("/api/sweeps", json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


def estimates(client: TestClient, sweep: dict[str, Any], every: int = 100) -> set[int]:
    jobs = [client.get(f"/api/jobs/{m['job_id']}").json() for m in sweep["members"][::every]]
    return {j["estimate_bytes_per_device"] for j in jobs}


def test_a_thousand_learning_rates_trace_once(
    client: TestClient, devices: str, traces: list[TraceSpec]
) -> None:
    created = sweep(client, {"lr": [1e-4 * (1 + i) for i in range(1000)]})
    assert len(created["members"]) == 1000 and len(traces) == 1
    assert len(estimates(client, created)) == 1


def test_a_nested_field_traces_once_and_k_once_per_value(
    client: TestClient, devices: str, traces: list[TraceSpec]
) -> None:
    sweep(client, {"ddp.bucket_cap_mb": [1.0 + i for i in range(500)]})
    assert len(traces) == 1
    created = sweep(client, {"k": [2, 4, 8], "seed": list(range(300))})
    assert [t.k for t in traces[1:]] == [2, 4, 8]
    assert len(estimates(client, created, every=300)) == 3
