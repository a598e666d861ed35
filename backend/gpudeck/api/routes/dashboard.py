"""Serves the built dashboard (frontend/dist) with a single-page-app fallback."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

DEFAULT_DIST = Path(__file__).resolve().parents[4] / "frontend" / "dist"
_RESERVED = ("api/", "ws/", "docs", "redoc", "openapi.json", "metrics")


def dashboard_router(dist: Path = DEFAULT_DIST) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    root = dist.resolve()

    @router.get("/{path:path}")
    def dashboard(path: str) -> FileResponse:
        if path.startswith(_RESERVED) or not (root / "index.html").is_file():
            raise HTTPException(status_code=404, detail="not found")
        candidate = (root / path).resolve()
        # Never serve anything outside dist, whatever the path says.
        if path and candidate.is_file() and candidate.is_relative_to(root):
            return FileResponse(candidate)
        return FileResponse(root / "index.html")

    return router
