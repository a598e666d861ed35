"""`/docs`: Swagger UI served from GPUDeck itself (GPUDeck runs offline: no CDN).

The page and its scripts hold no data and are public; the schema they show (`/openapi.json`)
needs a token like every route, which the page adds to each request it makes (see
`docs_assets/docs.js`). The bearer scheme is declared in the schema, so "Authorize" works."""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse

OWN_ASSETS = Path(__file__).resolve().parent.parent / "docs_assets"
# Only what the page loads: the rest of the package's static folder is never served.
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")
DOCS_PATHS = ("/docs", *(f"/docs/assets/{name}" for name in (*SWAGGER_FILES, "gpudeck-docs.js")))
BEARER = {"bearer": {"type": "http", "scheme": "bearer", "description": "a GPUDeck API token"}}
PUBLIC_OPERATIONS = {("/api/health", "get")}

router = APIRouter(include_in_schema=False)


def _swagger_static() -> Path:
    return Path(str(importlib.resources.files("swagger_ui") / "static"))


@router.get("/docs")
def docs_page() -> HTMLResponse:
    return HTMLResponse((OWN_ASSETS / "docs.html").read_text())


@router.get("/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    if name == "gpudeck-docs.js":
        return FileResponse(OWN_ASSETS / "docs.js", media_type="text/javascript")
    if name not in SWAGGER_FILES:
        raise HTTPException(404)
    return FileResponse(_swagger_static() / name)


def install_bearer_scheme(app: FastAPI) -> None:
    """Declare the bearer token in the OpenAPI schema: every operation needs it, but health."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description,
                routes=app.routes,
            )  # fmt: skip
            schema.setdefault("components", {})["securitySchemes"] = BEARER
            schema["security"] = [{"bearer": []}]
            for path, method in PUBLIC_OPERATIONS:
                schema["paths"][path][method]["security"] = []
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
