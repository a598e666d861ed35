"""services/jobs/settings.py: every config field with its default and whether it is that
default, what a schedule's share comes to in steps, and the fields where configs differ."""

from __future__ import annotations

from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.schemas.settings import SettingPublic
from gpudeck.services.jobs.settings import diff_configs, job_settings, settings_of
from gpudeck.services.submit.checks import validate_config


def _by_path(kind: str, config: dict[str, object]) -> dict[str, SettingPublic]:
    return {s.path: s for s in settings_of(kind, validate_config(kind, config, 1))}


def test_every_field_is_listed_with_defaults_marked_and_shares_in_steps() -> None:
    config = validate_config("sae", {"lr": 0.01, "steps": 1500, "lr_warm_up_steps": 0.1}, 1)
    rows = {s.path: s for s in settings_of("sae", config)}
    # Every leaf of the stored config, nested ones by dots, in the kind's order.
    leaves = [k for k, v in config.items() if not isinstance(v, dict)]
    leaves += [f"{k}.{n}" for k, v in config.items() if isinstance(v, dict) for n in v]
    assert sorted(rows) == sorted(leaves) and list(rows)[:3] == ["architecture", "k", "d_in"]
    assert "dataset.num_features" in rows and "dataset" not in rows
    lr, steps, k = rows["lr"], rows["steps"], rows["k"]
    assert (lr.value, lr.default, lr.is_default) == (0.01, 4e-3, False)
    assert (steps.value, steps.is_default) == (1500, False)
    assert (k.value, k.is_default, k.has_default) == (5, True, True)
    # A share of the run reads in steps of this run: 0.1 x 1,500 and the default 0.2 x 1,500.
    assert rows["lr_warm_up_steps"].note == "150 steps"
    assert not rows["lr_warm_up_steps"].is_default
    decay = rows["lr_decay_steps"]
    assert (decay.note, decay.is_default) == ("300 steps", True)
    # A whole count the run does not cut says nothing more than the value.
    assert rows["l1_warm_up_steps"].note == ""


def test_empty_fields_say_what_they_stand_for_per_architecture() -> None:
    jumprelu = _by_path("sae", {"architecture": "jumprelu", "d_in": 128, "steps": 100})
    assert jumprelu["l0_coefficient"].note == "2 (d_in / 64)"
    assert jumprelu["topk_warm_up_steps"].note == "50 steps"
    assert jumprelu["grad_clip_norm"].note == "1"
    topk = _by_path("sae", {"steps": 100})
    assert topk["grad_clip_norm"].note == "never"
    assert topk["topk_warm_up_steps"].note == ""  # topk has none


def test_a_union_members_fields_take_their_own_defaults() -> None:
    rows = _by_path("sae", {"dataset": {"type": "file", "path": "x.npy"}})
    # The default dataset is synthetic: a file dataset is not the default, its path is required.
    assert not rows["dataset.type"].is_default
    assert rows["dataset.type"].default == "synthetic"
    path = rows["dataset.path"]
    assert (path.has_default, path.is_default) == (False, False)
    assert rows["dataset.tensor_name"].is_default
    assert "dataset.num_features" not in rows


def test_a_diff_lists_exactly_the_fields_that_differ() -> None:
    a = validate_config("sae", {"lr": 0.01, "steps": 100}, 1)
    b = validate_config("sae", {"lr": 0.02, "steps": 100}, 1)
    c = validate_config("sae", {"lr": 0.01, "steps": 100, "k": 8}, 1)
    fields, same = diff_configs([a, b])
    assert [(f.path, f.values) for f in fields] == [("lr", [0.01, 0.02])]
    assert same == len(list(settings_of("sae", a))) - 1
    fields, _ = diff_configs([a, b, c])
    assert [(f.path, f.values) for f in fields] == [("k", [5, 5, 8]), ("lr", [0.01, 0.02, 0.01])]
    # A field one config lacks differs, and says which config lacks it.
    other = validate_config("sae", {"dataset": {"type": "file", "path": "x.npy"}, "steps": 100}, 1)
    fields, _ = diff_configs([a, other])
    by_path = {f.path: f for f in fields}
    assert by_path["dataset.path"].present == [False, True]
    assert by_path["dataset.num_features"].values == [512, None]
    assert by_path["dataset.type"].values == ["synthetic", "file"]


def test_a_job_outside_a_sweep_has_no_sweep_differences(db: Session, devices: str) -> None:
    job = make_job(db, count=1, config={"steps": 10, "batch_size": 64, "lr": 0.02})
    answer = job_settings(db, job.id)
    assert answer.sweep_id is None and answer.sweep_differences == []
    assert {s.path: s.value for s in answer.settings}["lr"] == 0.02


def test_a_free_form_mapping_is_one_value_not_required_fields() -> None:
    # A script's env: its keys are the user's, not fields the kind requires.
    rows = {s.path: s for s in settings_of("script", {"entrypoint": "t.py", "env": {"A": "1"}})}
    assert "env.A" not in rows
    env = rows["env"]
    assert (env.value, env.default, env.has_default) == ({"A": "1"}, {}, True)
    assert not env.is_default
