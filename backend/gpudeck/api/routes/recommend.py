"""POST /api/gpus/recommend: which devices to take, from live free memory."""

from __future__ import annotations

from fastapi import APIRouter, Request

from gpudeck.api.deps import SessionDep
from gpudeck.schemas.recommend import RecommendationPublic, RecommendRequest
from gpudeck.services.cluster.telemetry import device_views
from gpudeck.services.placement.live_memory import candidates
from gpudeck.services.placement.recommend import recommend

router = APIRouter(prefix="/api/gpus", tags=["gpus"])


@router.post("/recommend")
def recommend_devices(
    body: RecommendRequest, session: SessionDep, request: Request
) -> RecommendationPublic:
    """Rank free devices for a job; every device left out comes with its reason."""
    views = device_views(session, request.app.state.redis)
    result = recommend(
        candidates(views),
        bytes_per_device=body.bytes_per_device,
        count=body.count,
        strategy=body.strategy,
        node=body.node,
        safety_margin_bytes=body.safety_margin_bytes,
    )
    return RecommendationPublic.model_validate(result)
