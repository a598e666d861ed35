"""A kind's config errors read as the user wrote the config: paths without pydantic's union
tags, no "Value error, " prefix, and the closest field for one the config does not have."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gpudeck.kinds.map.config import MapFunctionConfig
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.script.config import ScriptConfig
from gpudeck.services.submit.config_errors import config_errors


def errors_of(model: type[BaseModel], config: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json(json.dumps(config), strict=True)
    return dict(config_errors(model, caught.value))


def test_an_unknown_field_suggests_the_field_its_form_label_names() -> None:
    # the form labels checkpoint_interval "checkpoint every": the usual near miss
    errors = errors_of(SaeConfig, {"checkpoint_every": 100})
    message = "unknown field 'checkpoint_every': did you mean checkpoint_interval?"
    assert errors == {"config.checkpoint_every": message}


def test_an_unknown_field_in_a_nested_object_or_union_branch_suggests_its_sibling() -> None:
    errors = errors_of(
        SaeConfig, {"ddp": {"bucket_cap": 1.0}, "dataset": {"type": "file", "pth": "a.npy"}}
    )
    assert errors["config.ddp.bucket_cap"].endswith("did you mean bucket_cap_mb?")
    # the union's tag ("file") is not part of the path the user wrote
    assert errors["config.dataset.pth"].endswith("did you mean path?")
    errors = errors_of(
        MapFunctionConfig, {"function": "m:f", "input": "i", "output": "o", "map": {"stratgy": "x"}}
    )
    assert errors["config.map.stratgy"].endswith("did you mean strategy?")


def test_an_unknown_field_with_no_near_name_lists_the_fields() -> None:
    message = errors_of(ScriptConfig, {"module": "m", "zzz": 1})["config.zzz"]
    assert message.startswith("unknown field 'zzz'; the fields here are: args, entrypoint, env")


def test_a_validator_message_has_no_value_error_prefix() -> None:
    assert errors_of(ScriptConfig, {}) == {"config": "give exactly one of entrypoint and module"}
    message = errors_of(SaeConfig, {"k": 600, "d_sae": 512})["config"]
    assert message == "k (600) must be at most d_sae (512)"
