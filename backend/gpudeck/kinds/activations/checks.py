"""What an activations job names must be there before it is accepted (a 422 naming the field),
as the sae and map kinds check theirs: the model under <data_dir>/models, the input under
<data_dir>/datasets, and an output that stays under <data_dir>/datasets. The rank checks them
again where it uses them (extract.py)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

from gpudeck.engine.kinds import InputError
from gpudeck.engine.map.inputs import ItemsError, resolve_new_under, resolve_under
from gpudeck.kinds.activations.config import ActivationsConfig


def check_inputs(config: ActivationsConfig, data_dir: Path) -> None:
    model_dir(data_dir, config.model, "model")
    resolve_field(data_dir, "datasets", config.input, "input")
    resolve_field(data_dir, "datasets", config.output, "output", resolve_new_under)


def resolve_field(
    data_dir: Path,
    root: str,
    relative: str,
    field: str,
    resolve: Callable[[Path, str], Path] = resolve_under,
) -> Path:
    """`relative` under <data_dir>/<root>, or an InputError on `field` saying why (with the
    closest names there when it is not found)."""
    try:
        return resolve(data_dir / root, relative)
    except ItemsError as exc:
        raise InputError(field, str(exc) + _did_you_mean(data_dir / root, relative)) from None


def model_dir(data_dir: Path, relative: str, field: str) -> Path:
    """A Hugging Face model directory under <data_dir>/models, or an InputError on `field`."""
    found = resolve_field(data_dir, "models", relative, field)
    if not (found / "config.json").is_file():
        raise InputError(field, f"{relative!r} is not a Hugging Face model directory")
    return found


def _did_you_mean(root: Path, relative: str) -> str:
    """The closest names under `root` (two levels deep, as the form's pick list offers them)."""
    names: list[str] = []
    for top, dirs, files in os.walk(root):
        depth = len(Path(top).relative_to(root).parts)
        dirs[:] = [d for d in dirs if not d.startswith(".")] if depth < 2 else []
        names += [(Path(top) / n).relative_to(root).as_posix() for n in dirs + files]
        if len(names) > 5000:
            break
    close = difflib.get_close_matches(relative, names, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
