"""POST /api/estimate and /api/estimate/max-batch: a job's peak memory per device, before launch.

The trace takes ~0.1 s of CPU, so it runs in the thread pool, never on the event loop; answers
are cached by config in gpudeck.trainer.memory.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from gpudeck.schemas.estimates import (
    EstimatePublic,
    EstimateRequest,
    MaxBatchPublic,
    MaxBatchRequest,
)
from gpudeck.services.errors import InvalidInput
from gpudeck.services.jobs import validate_config
from gpudeck.trainer.kinds import get_kind

router = APIRouter(prefix="/api/estimate", tags=["estimates"])
# An unknown kind or invalid config is a 422 in FastAPI's own validation-error shape (the error
# handler writes domain 422s that way), so the default 422 schema describes it; no override.


@router.post("")
async def estimate(request: EstimateRequest) -> EstimatePublic:
    config = _validated(request)
    result = await run_in_threadpool(_estimate, request.kind, config, request)
    return EstimatePublic.model_validate(result.model_dump())


@router.post("/max-batch")
async def max_batch(request: MaxBatchRequest) -> MaxBatchPublic:
    if request.kind != "sae":
        raise InvalidInput([("kind", f"no batch-size search for kind {request.kind!r}")])
    config = _validated(request)
    return await run_in_threadpool(_max_batch, config, request)


def _validated(request: EstimateRequest) -> Any:
    data = validate_config(request.kind, request.config, request.world_size)
    kind = get_kind(request.kind)
    assert kind is not None  # validate_config refuses unknown kinds
    if kind.estimate_memory is None:
        raise InvalidInput([("kind", f"kind {request.kind!r} has no memory estimate")])
    return kind.config_model.model_validate(data)


def _estimate(kind_name: str, config: Any, request: EstimateRequest) -> Any:
    kind = get_kind(kind_name)
    assert kind is not None
    estimate_fn = kind.resolve_estimate()
    assert estimate_fn is not None
    if kind_name == "sae":  # the built-in kind also estimates for CPU (simulated devices)
        return estimate_fn(config, request.world_size, device_type=request.device_type)
    return estimate_fn(config, request.world_size)


def _max_batch(config: Any, request: MaxBatchRequest) -> MaxBatchPublic:
    from gpudeck.trainer import memory  # torch loads here, in the worker thread, on first use

    batch = memory.max_batch_size(
        config,
        request.world_size,
        request.bytes_free_per_device,
        safety_margin_bytes=request.safety_margin_bytes,
        device_type=request.device_type,
    )
    if batch == 0:
        return MaxBatchPublic(batch_size=0, per_rank_batch=0, estimate=None)
    sized = config.model_copy(update={"batch_size": batch})
    result = memory.estimate_sae(sized, request.world_size, device_type=request.device_type)
    public = EstimatePublic.model_validate(result.model_dump())
    return MaxBatchPublic(
        batch_size=batch, per_rank_batch=batch // request.world_size, estimate=public
    )
