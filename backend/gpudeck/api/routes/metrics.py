"""`GET /metrics` for Prometheus (DCGM-compatible device metrics plus gpudeck_*)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from gpudeck.api.deps import SessionDep
from gpudeck.api.metrics_view import render_metrics
from gpudeck.api.routes.gpus import RedisDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
def metrics(session: SessionDep, r: RedisDep, request: Request) -> Response:
    hub = getattr(request.app.state, "telemetry_hub", None)
    return Response(render_metrics(session, r, hub), media_type=CONTENT_TYPE_LATEST)
