"""The `sae_eval` job kind: score one checkpoint of an `sae` job (running or ended) on rows it
was not trained on: L0, explained variance, MSE, dead latents and the feature-density
histogram. An `sae` job offers it as its follow-up ("Evaluate a checkpoint").

What the registry loads (entry point `sae_eval = "gpudeck.kinds.sae_eval:KIND"`): the config
model and code references, nothing that imports torch.
"""

from __future__ import annotations

from gpudeck.engine.kinds import Chart, JobKind, Series
from gpudeck.kinds.sae_eval import density
from gpudeck.kinds.sae_eval.config import SaeEvalConfig

KIND = JobKind(
    name="sae_eval",
    description=(
        "Score a checkpoint of an SAE job on held-out rows: L0, explained variance, MSE, dead"
        " latents, feature density"
    ),
    config_model=SaeEvalConfig,
    train="gpudeck.kinds.sae_eval.run:train",
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
        Series("l0", "L0"),
        Series("mse", "MSE"),
        Series("dead_pct", "dead % (never fired on the rows)"),
        Series("rows", "rows scored"),
        Series("mmcs", "mmcs"),
        Series("features_recovered_pct", "features recovered %"),
    ),
)
