from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from gpudeck.api.deps import CurrentUser, SettingsDep
from gpudeck.schemas.choices import DataChoicePublic
from gpudeck.services.data import choices as data_choices
from gpudeck.services.data import code_choices

router = APIRouter(prefix="/api/choices", tags=["datasets"])


@router.get("/{source}")
def list_choices(
    source: Literal["models", "datasets", "code_roots"], settings: SettingsDep, _: CurrentUser
) -> list[DataChoicePublic]:
    """What a config field marked `x-choices: <source>` may pick: the models under
    <data_dir>/models (a directory with a config.json) or the data files under
    <data_dir>/datasets (.npy, .safetensors, .jsonl), with d_in and sizes; `code_roots`: the
    .py files under the server's code roots (a script's entry point), each with its root."""
    if source == "code_roots":
        found = code_choices.list_code(settings.code_roots)
    else:
        found = data_choices.list_choices(settings.data_dir, source)
    return [DataChoicePublic.model_validate(choice) for choice in found]
