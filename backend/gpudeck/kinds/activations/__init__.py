"""The `activations` job kind: run a local Hugging Face causal LM over token ids or text on
every chosen device and save one hook point's activations, in the format the `sae` kind reads.

What the registry loads (entry point `activations = "gpudeck.kinds.activations:KIND"`): the
config model and code references, nothing that imports torch or transformers.
"""

from __future__ import annotations

from gpudeck.engine.kind_api import KIND_API_VERSION
from gpudeck.engine.kinds import Chart, JobKind, Series
from gpudeck.kinds.activations.config import ActivationsConfig

KIND = JobKind(
    name="activations",
    api_version=KIND_API_VERSION,  # built in: always written for the current version
    description="Extract a causal LM's activations at a hook point (a data-parallel map job)",
    config_model=ActivationsConfig,
    train="gpudeck.kinds.activations.extract:train",
    charts=(Chart("Throughput", (Series("items_per_s", "sequences/s"),)),),
    summary_metrics=(Series("rows", "activation rows"), Series("items_per_s", "sequences/s")),
    resumes_from="output",
    follow_up="gpudeck.kinds.activations.follow_up:sae_on_output",
    check_inputs="gpudeck.kinds.activations.checks:check_inputs",
)
