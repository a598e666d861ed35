"""POST /api/estimate and /api/estimate/max-batch: a job's peak memory per device, before launch.

The trace takes ~0.1 s of CPU, so it runs in the thread pool, never on the event loop; answers
are cached by config by each kind's estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from gpudeck.engine.kinds import JobKind, MemoryEstimate, get_kind
from gpudeck.schemas.estimates import (
    EstimatePublic,
    EstimateRequest,
    ExpectationPublic,
    MaxBatchPublic,
    MaxBatchRequest,
)
from gpudeck.services.errors import InvalidInput
from gpudeck.services.submit.checks import validate_config

router = APIRouter(prefix="/api/estimate", tags=["estimates"])
# An unknown kind or invalid config is a 422 in FastAPI's own validation-error shape (the error
# handler writes domain 422s that way), so the default 422 schema describes it; no override.


@router.post("")
async def estimate(request: EstimateRequest) -> EstimatePublic:
    kind, config = _validated(request)
    estimate_fn = kind.resolve_estimate()
    if estimate_fn is None:
        raise InvalidInput([("kind", f"kind {request.kind!r} has no memory estimate")])
    result = await run_in_threadpool(
        estimate_fn, config, request.world_size, device_type=request.device_type
    )
    public = EstimatePublic.model_validate(result.model_dump())
    expectations_fn = kind.resolve_expectations()
    if expectations_fn is not None:
        public.expectations = [
            ExpectationPublic.model_validate(e, from_attributes=True)
            for e in expectations_fn(config)
        ]
    return public


@router.post("/max-batch")
async def max_batch(request: MaxBatchRequest) -> MaxBatchPublic:
    kind, config = _validated(request)
    search, estimate_fn = kind.resolve_max_batch(), kind.resolve_estimate()
    if search is None or estimate_fn is None:
        raise InvalidInput([("kind", f"no batch-size search for kind {request.kind!r}")])
    return await run_in_threadpool(_max_batch, kind, search, estimate_fn, config, request)


def _validated(request: EstimateRequest) -> tuple[JobKind, Any]:
    data = validate_config(request.kind, request.config, request.world_size)
    kind = get_kind(request.kind)
    assert kind is not None  # validate_config refuses unknown kinds
    return kind, kind.config_model.model_validate(data)


def _max_batch(
    kind: JobKind,
    search: Callable[..., int],
    estimate_fn: Callable[..., MemoryEstimate],
    config: Any,
    request: MaxBatchRequest,
) -> MaxBatchPublic:
    batch = search(
        config,
        request.world_size,
        request.bytes_free_per_device,
        safety_margin_bytes=request.safety_margin_bytes,
        device_type=request.device_type,
    )
    if batch == 0:
        return MaxBatchPublic(batch_size=0, per_rank_batch=0, estimate=None)
    assert kind.batch_size_field is not None  # a kind with a batch search names its field
    sized = config.model_copy(update={kind.batch_size_field: batch})
    result = estimate_fn(sized, request.world_size, device_type=request.device_type)
    public = EstimatePublic.model_validate(result.model_dump())
    return MaxBatchPublic(
        batch_size=batch, per_rank_batch=batch // request.world_size, estimate=public
    )
