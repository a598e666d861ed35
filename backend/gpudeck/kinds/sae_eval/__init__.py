"""The `sae_eval` job kind: score one checkpoint of an `sae` job (running or ended) on rows it
was not trained on: L0, explained variance, MSE, dead latents and the feature-density
histogram; with `loss_recovered`, also SAEBench's loss recovered on the language model the
activations came from. An `sae` job offers it as its follow-up ("Evaluate a checkpoint").

What the registry loads (entry point `sae_eval = "gpudeck.kinds.sae_eval:KIND"`): the config
model and code references, nothing that imports torch.
"""

from __future__ import annotations

from gpudeck.engine.kind_api import KIND_API_VERSION
from gpudeck.engine.kinds import Chart, JobKind, Series
from gpudeck.kinds.sae_eval import density
from gpudeck.kinds.sae_eval.config import SaeEvalConfig

KIND = JobKind(
    name="sae_eval",
    api_version=KIND_API_VERSION,  # built in: always written for the current version
    description=(
        "Score a checkpoint of an SAE job on held-out rows: L0, explained variance, MSE, dead"
        " latents, feature density; loss recovered on the language model"
    ),
    config_model=SaeEvalConfig,
    train="gpudeck.kinds.sae_eval.run:train",
    estimate_memory="gpudeck.kinds.sae_eval.memory:estimate_memory",
    # The checkpoint (its shapes), the batch and the language model: memory.estimate_memory.
    estimate_fields=(
        "source_job",
        "step",
        "batch_size",
        "loss_recovered.type",
        "loss_recovered.model",
        "loss_recovered.dtype",
        "loss_recovered.context_length",
        "loss_recovered.batch_size",
    ),
    check_inputs="gpudeck.kinds.sae_eval.checks:check_inputs",
    reads_job_field="source_job",
    charts=(
        Chart(
            "Feature density (latents per log10 firing frequency)",
            density.SERIES,
            style="bars",
            x_label="log10 firing frequency (-2 = fires on 1 % of rows; never: on none)",
        ),
    ),
    summary_metrics=(
        Series("explained_variance", "explained var."),
        # loss recovered beside the three losses it is the ratio of
        Series("loss_recovered", "loss recovered", needs="loss_recovered"),
        Series("lm_loss_clean", "LM loss (clean)", needs="loss_recovered"),
        Series("lm_loss_sae", "LM loss (SAE spliced in)", needs="loss_recovered"),
        Series("lm_loss_zero", "LM loss (hook zeroed)", needs="loss_recovered"),
        Series("l0", "L0"),
        Series("mse", "MSE"),
        Series("dead_pct", "dead % (never fired on the rows)"),
        Series("rows", "rows scored"),
        Series("mmcs", "mmcs (synthetic data)"),
        Series("features_recovered_pct", "features recovered % (synthetic data)"),
    ),
)
