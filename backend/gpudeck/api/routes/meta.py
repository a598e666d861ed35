from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import text

from gpudeck import __version__
from gpudeck.api.deps import SessionDep, SettingsDep
from gpudeck.schemas.jobs import JobKindPublic
from gpudeck.trainer.kinds import registry
from gpudeck.trainer.sae_config import SaeConfig

router = APIRouter(prefix="/api", tags=["meta"])


@router.get("/health")
def health(session: SessionDep, settings: SettingsDep) -> dict[str, str]:
    session.execute(text("SELECT 1"))
    return {"status": "ok", "version": __version__, "node": settings.node_name}


@router.get("/kinds")
def list_kinds() -> list[JobKindPublic]:
    """Registered job kinds with their config's JSON schema and defaults (for forms and CLIs)."""
    return [
        JobKindPublic(
            name=kind.name,
            description=kind.description,
            config_schema=kind.config_model.model_json_schema(),
            defaults=kind.config_model().model_dump(mode="json"),
        )
        for kind in registry().values()
    ]


@router.get("/kinds/sae/defaults")
def sae_defaults() -> SaeConfig:
    """The built-in `sae` kind's config, typed (the dashboard's form is generated from it)."""
    return SaeConfig()
