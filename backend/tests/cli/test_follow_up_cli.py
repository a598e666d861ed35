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
