from __future__ import annotations

from typing import Annotated

import redis
from fastapi import APIRouter, Depends, Query, Request, Response

from gpudeck.api.deps import SessionDep
from gpudeck.schemas.gpus import GpuPublic, NodePublic
from gpudeck.services.cluster import telemetry
from gpudeck.services.cluster.inventory import list_nodes
from gpudeck.telemetry.schema import TelemetryHistory

router = APIRouter(prefix="/api", tags=["gpus"])


def get_redis(request: Request) -> redis.Redis:
    client: redis.Redis = request.app.state.redis
    return client


RedisDep = Annotated[redis.Redis, Depends(get_redis)]


@router.get("/gpus")
def list_gpus(session: SessionDep, r: RedisDep) -> list[GpuPublic]:
    """Every device: inventory, holder job, external processes and the newest sample's readings."""
    return telemetry.device_views(session, r)


@router.get("/gpus/history", response_model=TelemetryHistory)
def gpu_history(
    r: RedisDep,
    seconds: Annotated[int, Query(ge=1, le=86400, description="how far back")] = 300,
    node: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
) -> Response:
    """Every node's samples of the last `seconds` (the stream keeps `telemetry_history_s`)."""
    samples = telemetry.history_json(r, seconds, node)
    body = f'{{"seconds":{seconds},"samples":[{",".join(samples)}]}}'
    return Response(content=body, media_type="application/json")


@router.get("/nodes")
def get_nodes(session: SessionDep, request: Request) -> list[NodePublic]:
    """Every node, whether it allows sharing its devices, and what a sharing job reserves
    beyond its estimate (the CUDA context reserve, the same setting submit adds)."""
    reserve = request.app.state.settings.cuda_context_reserve_bytes
    return [
        NodePublic.model_validate(row).model_copy(update={"cuda_context_reserve_bytes": reserve})
        for row in list_nodes(session)
    ]
