"""A kind's config errors as the user should read them: the field's path as they wrote it, the
reason without pydantic's "Value error, " prefix, and, for a field the config does not have, the
closest one it does ("checkpoint_every" -> "did you mean checkpoint_interval?").

The form shows each field's API name under its label; the CLI and scripts write the names by
hand, where a near miss is the usual mistake."""

from __future__ import annotations

import difflib
import re
import typing
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

# pydantic names the branch of a union an error is about in its loc ("constrained-int",
# "literal['auto']", a model's class name): not a field the user can write.
_UNION_TAG = re.compile(r"^(constrained-)?(int|float|str|bool)$|^[a-z-]+\[|^[A-Z]")


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's type can hold (through Annotated, unions, lists and dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _tags(model: type[BaseModel]) -> set[str]:
    """The Literal values a model's fields are pinned to: a discriminated union's tags."""
    tags: set[str] = set()
    for field in model.model_fields.values():
        if typing.get_origin(field.annotation) is Literal:
            tags.update(str(v) for v in typing.get_args(field.annotation))
    return tags


def _walk(
    root: type[BaseModel], loc: tuple[int | str, ...]
) -> tuple[list[str], list[type[BaseModel]]]:
    """The loc's user-facing parts, and the models that may hold its last part."""
    parts: list[str] = []
    models = [root]
    for index, part in enumerate(loc):
        if isinstance(part, int):
            parts.append(str(part))
            continue
        if _UNION_TAG.match(part):
            continue
        owners = [m for m in models if part in m.model_fields]
        if not owners and index < len(loc) - 1:
            tagged = [m for m in models if part in _tags(m)]
            if tagged:  # a discriminated union's tag ("dataset.file.path"): the branch, not a field
                models = tagged
                continue
        parts.append(part)
        if index < len(loc) - 1:
            inner = [m for o in owners for m in _models_in(o.model_fields[part].annotation)]
            models = inner or models
    return parts, models


def _suggestion(name: str, models: list[type[BaseModel]]) -> str | None:
    """The field the user most likely meant: by name, or by the label the form shows."""
    by_spelling: dict[str, str] = {}
    for model in models:
        for field_name, info in model.model_fields.items():
            by_spelling.setdefault(field_name.lower(), field_name)
            if info.title:
                by_spelling.setdefault(re.sub(r"\W+", "_", info.title.strip().lower()), field_name)
    typed = re.sub(r"\W+", "_", name.strip().lower())
    close = difflib.get_close_matches(typed, list(by_spelling), n=1, cutoff=0.6)
    return by_spelling[close[0]] if close else None


def _message(error: Any, name: str, models: list[type[BaseModel]]) -> str:
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] != "extra_forbidden":
        return message
    fields = sorted({f for m in models for f in m.model_fields})
    guess = _suggestion(name, models)
    if guess:
        return f"unknown field {name!r}: did you mean {guess}?"
    return f"unknown field {name!r}; the fields here are: {', '.join(fields)}"


def config_errors(model: type[BaseModel], exc: ValidationError) -> list[tuple[str, str]]:
    """(field path under `config.`, message) for each of the errors, without repeats."""
    errors: list[tuple[str, str]] = []
    for error in exc.errors():
        parts, models = _walk(model, tuple(error["loc"]))
        name = parts[-1] if parts else ""
        errors.append((".".join(["config", *parts]), _message(error, name, models)))
    return list(dict.fromkeys(errors))
