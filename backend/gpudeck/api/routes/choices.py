from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from gpudeck.api.deps import CurrentUser, SettingsDep
from gpudeck.schemas.choices import DataChoicePublic
from gpudeck.services.data import choices as data_choices

router = APIRouter(prefix="/api/choices", tags=["datasets"])


@router.get("/{source}")
def list_choices(
    source: Literal["models", "datasets"], settings: SettingsDep, _: CurrentUser
) -> list[DataChoicePublic]:
    """What a config field marked `x-choices: <source>` may pick: the models under
    <data_dir>/models (a directory with a config.json) or the data files under
    <data_dir>/datasets (.npy, .safetensors, .jsonl), with d_in and sizes."""
    return [
        DataChoicePublic.model_validate(choice)
        for choice in data_choices.list_choices(settings.data_dir, source)
    ]
