"""`gpudeck submit sae --on-output JOB`: the real command against a live API. The SAE job is
prefilled from the extraction's follow-up and waits for it (depends_on)."""

from __future__ import annotations

import json

from cli_harness import Cli

from gpudeck.core.config import Settings

EXTRACTION = {"model": "m", "input": "ids.npy", "hook": "transformer.h.0", "output": "acts/x"}


def test_an_sae_on_an_extractions_output_waits_for_it(cli: Cli, cli_settings: Settings) -> None:
    (cli_settings.data_dir / "models" / "m").mkdir(parents=True)
    (cli_settings.data_dir / "models" / "m" / "config.json").write_text('{"hidden_size": 40}')
    (cli_settings.data_dir / "datasets").mkdir(parents=True, exist_ok=True)
    (cli_settings.data_dir / "datasets" / "ids.npy").write_bytes(b"")  # checked at submit
    held = cli("submit", "activations", "--config", json.dumps(EXTRACTION), "--hold", "--json")
    assert held.returncode == 0, held.stderr
    source = json.loads(held.stdout)["id"]

    sae = cli("submit", "sae", "--on-output", str(source), "--config", '{"d_sae": 64}', "--json")
    assert sae.returncode == 0, sae.stderr
    assert "hidden size" in sae.stderr  # the note: d_in is a guess until the extraction ran
    job = json.loads(sae.stdout)
    assert job["depends_on"] == [source] and job["status"] == "queued"
    assert job["config"]["d_in"] == 40 and job["config"]["d_sae"] == 64
    assert job["config"]["dataset"]["path"] == "acts/x/activations.safetensors"

    wrong = cli("submit", "activations", "--on-output", str(source), "--config", "{}")
    assert wrong.returncode == 2 and "feeds a sae job, not activations" in wrong.stderr


def test_an_evaluation_takes_loss_recovered_from_the_extraction(
    cli: Cli, cli_settings: Settings
) -> None:
    """`gpudeck submit sae_eval --on-output SAE` prefills loss recovered from the cfg.json the
    extraction wrote beside the SAE's file; --config replaces it, and a hook of the wrong width
    is refused naming the field."""
    import numpy as np
    import torch
    from activations_fixtures import tiny_gpt2
    from sae_eval_fixtures import identity_sae, write_sae_checkpoint
    from safetensors.torch import save_file

    data = cli_settings.data_dir
    tiny_gpt2(data / "models")
    (data / "datasets" / "acts" / "x").mkdir(parents=True)
    np.save(data / "datasets" / "ids.npy", np.zeros((4, 8), dtype=np.int64))
    save_file(
        {"activations": torch.zeros(2048, 32)}, data / "datasets/acts/x/activations.safetensors"
    )
    cfg = {"kind": "activations", "model": "gpt2-tiny", "input": "ids.npy",
           "hook": "transformer.h.0", "hook_io": "output", "context_length": 8}  # fmt: skip
    (data / "datasets" / "acts" / "x" / "cfg.json").write_text(json.dumps(cfg))
    trained = {"d_in": 32, "d_sae": 64, "batch_size": 64,
               "dataset": {"type": "file", "path": "acts/x/activations.safetensors"}}  # fmt: skip
    held = cli("submit", "sae", "--config", json.dumps(trained), "--hold", "--json")
    assert held.returncode == 0, held.stderr
    source = json.loads(held.stdout)["id"]
    write_sae_checkpoint(data, 5, job=source, weights=identity_sae(32), **trained)

    scored = cli("submit", "sae_eval", "--on-output", str(source), "--hold", "--json")
    assert scored.returncode == 0, scored.stderr
    prefilled = json.loads(scored.stdout)["config"]["loss_recovered"]
    assert {k: prefilled[k] for k in cfg if k != "kind"} == {k: cfg[k] for k in cfg if k != "kind"}
    assert "acts/x/cfg.json" in scored.stderr  # the note says where it came from

    wide = {"loss_recovered": {**prefilled, "hook": "transformer.h.0.mlp.c_fc"}}
    refused = cli("submit", "sae_eval", "--on-output", str(source), "--config", json.dumps(wide))
    assert refused.returncode != 0
    assert "loss_recovered.hook" in refused.stderr and "128 wide" in refused.stderr, refused
