"""Loss recovered in process, on a tiny GPT-2 trained to count (so its loss depends on its
residual stream): an SAE that reconstructs exactly recovers all of it, one that reconstructs
zeros none; the figures do not depend on how sequences are batched; what it names is refused
at submit naming the field; the evaluation follow-up prefills it from the extraction's
cfg.json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from activations_fixtures import texts
from pydantic import ValidationError
from sae_eval_fixtures import (
    SOURCE_JOB,
    FakeContext,
    counting_gpt2,
    counting_ids,
    identity_sae,
    write_rows,
    write_sae_checkpoint,
    zero_sae,
)

from gpudeck.engine.kinds import InputError
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.follow_up import evaluate_checkpoint
from gpudeck.kinds.sae_eval import lm_loss
from gpudeck.kinds.sae_eval.checks import check_inputs
from gpudeck.kinds.sae_eval.config import SaeEvalConfig
from gpudeck.kinds.sae_eval.memory import estimate_memory
from gpudeck.kinds.sae_eval.run import train

WIDTH = 32  # the tiny GPT-2's n_embd
LM = {"type": "lm", "model": "gpt2-tiny", "input": "ids.npy", "hook": "transformer.h.0"}


@pytest.fixture(scope="module")
def lm_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("lm")
    counting_gpt2(data / "models")
    (data / "datasets").mkdir()
    np.save(data / "datasets" / "ids.npy", counting_ids(12))
    lines = [json.dumps({"text": t}) for t in texts(6)]
    (data / "datasets" / "texts.jsonl").write_text("\n".join(lines) + "\n")
    write_rows(data, "rows.npy", np.random.default_rng(0).normal(size=(8, WIDTH)))
    return data


def _config(**lm: Any) -> SaeEvalConfig:
    return SaeEvalConfig.model_validate(
        {
            "source_job": SOURCE_JOB,
            "dataset": {"type": "file", "path": "rows.npy"},
            "loss_recovered": {**LM, **lm},
        }
    )


def _figures(data: Path, weights: dict[str, torch.Tensor], **lm: Any) -> dict[str, float]:
    write_sae_checkpoint(data, 5, weights=weights)
    ctx = FakeContext(data)
    train(ctx, _config(**lm))  # type: ignore[arg-type]
    [(_, metrics)] = ctx.reports
    assert ctx.progress_seen[-1][0] == ctx.progress_seen[-1][1]  # one bar over rows and sequences
    return metrics


@pytest.mark.parametrize(
    ("hook", "io"), [("transformer.h.0", "output"), ("transformer.h.1", "input")]
)
def test_an_exact_reconstruction_recovers_all_the_loss(lm_data: Path, hook: str, io: str) -> None:
    found = _figures(lm_data, identity_sae(WIDTH), hook=hook, hook_io=io)
    assert found["lm_loss_clean"] < 2.5 < 4 < found["lm_loss_zero"]  # the hook matters
    assert found["lm_loss_sae"] == pytest.approx(found["lm_loss_clean"], abs=1e-5)
    assert found["loss_recovered"] == pytest.approx(1.0, abs=1e-5)
    assert found["lm_tokens"] == 12 * 15  # every token but each sequence's first is predicted


def test_a_topk_sae_is_spliced_in_row_by_row(lm_data: Path) -> None:
    """TopK's encode takes rows [N, d_in]; the hook's tensor is [batch, tokens, d_in]. The
    identity SAE as TopK with k = d_in keeps every non-zero latent: still exact."""
    write_sae_checkpoint(lm_data, 5, weights=identity_sae(WIDTH), architecture="topk", k=WIDTH)
    ctx = FakeContext(lm_data)
    train(ctx, _config())  # type: ignore[arg-type]
    [(_, found)] = ctx.reports
    assert found["lm_loss_sae"] == pytest.approx(found["lm_loss_clean"], abs=1e-5)
    assert found["loss_recovered"] == pytest.approx(1.0, abs=1e-5)


def test_the_clean_loss_is_the_models_own(lm_data: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(lm_data / "models" / "gpt2-tiny")
    ids = torch.as_tensor(counting_ids(12))
    with torch.inference_mode():
        expected = float(model(input_ids=ids, labels=ids).loss)
    found = _figures(lm_data, identity_sae(WIDTH))
    assert found["lm_loss_clean"] == pytest.approx(expected, rel=1e-5)


def test_text_is_scored_without_its_padding(lm_data: Path) -> None:
    """Texts of different lengths, batched (right-padded) or one at a time: the same tokens
    and the same losses."""
    one = _figures(lm_data, identity_sae(WIDTH), input="texts.jsonl", batch_size=1)
    padded = _figures(lm_data, identity_sae(WIDTH), input="texts.jsonl", batch_size=6)
    for name in ("lm_tokens", "lm_loss_clean", "lm_loss_sae", "lm_loss_zero"):
        assert padded[name] == pytest.approx(one[name], rel=1e-5), name


def test_a_reconstruction_of_zeros_recovers_none(lm_data: Path) -> None:
    found = _figures(lm_data, zero_sae(WIDTH))
    assert found["lm_loss_sae"] == pytest.approx(found["lm_loss_zero"], abs=1e-6)
    assert found["loss_recovered"] == pytest.approx(0.0, abs=1e-6)
    noisy = identity_sae(WIDTH)
    noisy["W_dec"] = torch.randn(2 * WIDTH, WIDTH, generator=torch.Generator().manual_seed(0))
    assert _figures(lm_data, noisy)["loss_recovered"] <= 0.05  # noise: no better than zeros


def test_a_loss_recovered_left_out_says_why() -> None:
    """Zeroing the hook lowers the loss (an untrained model): no ratio, and a log line
    saying why, since the job page only shows a dash."""
    found = lm_loss.figures(torch.tensor([4.61, 4.62, 4.60, 1.0], dtype=torch.float64))
    assert "loss_recovered" not in found
    why = lm_loss.left_out(found, "transformer.h.0")
    assert why is not None and "zeroing transformer.h.0 did not raise" in why
    assert "clean 4.6100, zeroed 4.6000" in why
    kept = lm_loss.figures(torch.tensor([1.0, 2.0, 6.0, 1.0], dtype=torch.float64))
    assert kept["loss_recovered"] == pytest.approx(0.8) and lm_loss.left_out(kept, "h") is None


def test_the_figures_do_not_depend_on_the_batches(lm_data: Path) -> None:
    whole = _figures(lm_data, identity_sae(WIDTH), batch_size=12, max_sequences=10)
    cut = _figures(lm_data, identity_sae(WIDTH), batch_size=3, max_sequences=10)
    assert whole["lm_tokens"] == cut["lm_tokens"] == 10 * 15
    for name in ("lm_loss_clean", "lm_loss_sae", "lm_loss_zero", "loss_recovered"):
        assert cut[name] == pytest.approx(whole[name], rel=1e-5), name


def test_the_config_section_is_strict() -> None:
    for bad, where in (
        ({"max_sequences": 0}, "max_sequences"),
        ({"max_sequences": math.nan}, "max_sequences"),
        ({"context_length": 1}, "context_length"),
        ({"model": "../up"}, "model"),
        ({"input": "ids.csv"}, "input"),
        ({"hook": "h.0; x"}, "hook"),
        ({"hook_io": "both"}, "hook_io"),
        ({"layer": 3}, "layer"),
    ):
        with pytest.raises(ValidationError) as raised:
            _config(**bad)
        assert where in str(raised.value), bad
    assert SaeEvalConfig(source_job=1).loss_recovered.type == "off"


def test_submit_refuses_what_the_model_cannot_run_naming_the_field(lm_data: Path) -> None:
    write_sae_checkpoint(lm_data, 5, weights=identity_sae(WIDTH))
    check_inputs(_config(), lm_data)
    check_inputs(_config(hook="transformer.h.1", hook_io="input"), lm_data)
    np.save(lm_data / "datasets" / "big_ids.npy", counting_ids(2) + 100)
    np.save(lm_data / "datasets" / "floats.npy", np.zeros((2, 4), dtype=np.float32))
    np.save(lm_data / "datasets" / "long_ids.npy", counting_ids(2, length=80))
    for change, field, reason in (
        ({"hook": "transformer.h.0.mlp.c_fc"}, "hook", "is 128 wide; the SAE's d_in is 32"),
        ({"hook": "transformer.h.9"}, "hook", "has no module transformer.h.9"),
        ({"model": "gpt2-tni"}, "model", "did you mean 'gpt2-tiny'?"),
        ({"input": "id.npy"}, "input", "did you mean 'ids.npy'"),
        ({"input": "big_ids.npy"}, "input", "outside the model's vocabulary [0, 100)"),
        ({"input": "floats.npy"}, "input", "expected integer token ids"),
        ({"input": "long_ids.npy", "context_length": 65}, "context_length", "65 tokens exceed"),
        ({"input": "ids.jsonl"}, "input", "not found"),
    ):
        with pytest.raises(InputError) as raised:
            check_inputs(_config(**change), lm_data)
        assert raised.value.field == f"loss_recovered.{field}", change
        assert reason in raised.value.reason, (change, raised.value.reason)
    check_inputs(_config(input="long_ids.npy", context_length=64), lm_data)  # cut to fit


def test_the_follow_up_prefills_loss_recovered_from_the_extraction(tmp_path: Path) -> None:
    run = tmp_path / "datasets" / "acts" / "run"
    run.mkdir(parents=True)
    cfg = {"kind": "activations", "model": "gpt2-tiny", "input": "ids.npy", "tensor_name": None,
           "text_field": "text", "hook": "transformer.h.0", "hook_io": "output",
           "positions": "all", "context_length": 16, "dtype": "float32", "d_in": WIDTH}  # fmt: skip
    (run / "cfg.json").write_text(json.dumps(cfg))
    trained = SaeConfig.model_validate(
        {"d_in": WIDTH, "dataset": {"type": "file", "path": "acts/run/activations.safetensors"}}
    )
    found = evaluate_checkpoint(trained, tmp_path)
    config = SaeEvalConfig.model_validate({**found.config, "source_job": 1})
    assert config.loss_recovered.model_dump() == {
        **LM, "tensor_name": None, "text_field": "text", "hook_io": "output",
        "context_length": 16, "max_sequences": 256, "batch_size": 8, "dtype": "float32",
    }  # fmt: skip
    assert "acts/run/cfg.json" in found.note
    elsewhere = SaeConfig.model_validate({"dataset": {"type": "file", "path": "other.npy"}})
    assert "loss_recovered" not in evaluate_checkpoint(elsewhere, tmp_path).config


def test_the_estimate_counts_the_models_parameters(lm_data: Path) -> None:
    from transformers import AutoModelForCausalLM

    write_sae_checkpoint(lm_data, 5, weights=identity_sae(WIDTH))
    found = estimate_memory(_config(), 1, device_type="cpu", data_dir=lm_data)
    model = AutoModelForCausalLM.from_pretrained(lm_data / "models" / "gpt2-tiny")
    loaded = sum(p.numel() * p.element_size() for p in model.parameters())
    assert found.bytes_by_component()["lm_parameters"] == loaded  # tied weights once
    assert found.bytes_by_component()["sae_parameters"] == (2 * 32 * 64 + 32 + 64) * 4
    assert "not counted" not in found.method
    gone = estimate_memory(_config(model="gone"), 1, device_type="cpu", data_dir=lm_data)
    assert "not counted: the model" in gone.method
