"""What an activations job names must be there before it is accepted (a 422 naming the field),
as the sae and map kinds check theirs: the model under <data_dir>/models, the input under
<data_dir>/datasets, and an output that stays under <data_dir>/datasets. The rank checks them
again where it uses them (extract.py)."""

from __future__ import annotations

from pathlib import Path

from gpudeck.engine.kinds import InputError
from gpudeck.engine.map.inputs import ItemsError, resolve_new_under, resolve_under
from gpudeck.kinds.activations.config import ActivationsConfig


def check_inputs(config: ActivationsConfig, data_dir: Path) -> None:
    for field, resolve, root, relative in (
        ("model", resolve_under, "models", config.model),
        ("input", resolve_under, "datasets", config.input),
        ("output", resolve_new_under, "datasets", config.output),
    ):
        try:
            found = resolve(data_dir / root, relative)
        except ItemsError as exc:
            raise InputError(field, str(exc)) from None
        if field == "model" and not (found / "config.json").is_file():
            raise InputError("model", f"{relative!r} is not a Hugging Face model directory")
