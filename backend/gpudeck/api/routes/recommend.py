"""POST /api/gpus/recommend: which devices to take, from live free memory, or, for a job that
shares devices by memory, from the reservation room; and whether it could start now by sharing."""

from __future__ import annotations

from fastapi import APIRouter, Request

from gpudeck.api.deps import CurrentUser, SessionDep
from gpudeck.schemas.recommend import RecommendationPublic, RecommendRequest
from gpudeck.services.placement.live_memory import candidates_now
from gpudeck.services.placement.recommend import recommend

router = APIRouter(prefix="/api/gpus", tags=["gpus"])


@router.post("/recommend")
def recommend_devices(
    body: RecommendRequest, session: SessionDep, request: Request, user: CurrentUser
) -> RecommendationPublic:
    """Rank devices for a job; every device left out comes with its reason."""
    result = recommend(
        candidates_now(session, request.app.state.redis),
        bytes_per_device=body.bytes_per_device,
        count=body.count,
        strategy=body.strategy,
        node=body.node,
        safety_margin_bytes=body.safety_margin_bytes,
        share=body.share,
        # The node's policy on sharing across users is judged against the caller.
        owner=user.name,
        # What submit adds to a sharing job's estimate (services/submit/sharing.py).
        context_reserve_bytes=request.app.state.settings.cuda_context_reserve_bytes,
    )
    return RecommendationPublic.model_validate(result)
