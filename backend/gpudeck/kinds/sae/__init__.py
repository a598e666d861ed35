"""The `sae` job kind: sparse autoencoders on activation vectors, saved in SAELens's layout.

This module is what the registry loads (entry point `sae = "gpudeck.kinds.sae:KIND"`): the
config model and references to the code, nothing that imports torch.
"""

from __future__ import annotations

from gpudeck.engine.kind_api import KIND_API_VERSION
from gpudeck.engine.kinds import Chart, JobKind, Series
from gpudeck.kinds.sae.config import SaeConfig

KIND = JobKind(
    name="sae",
    api_version=KIND_API_VERSION,  # built in: always written for the current version
    description=(
        "Sparse autoencoder on activation vectors: TopK, BatchTopK, JumpReLU or standard ReLU"
        " (SAELens-compatible checkpoints)"
    ),
    config_model=SaeConfig,
    train="gpudeck.kinds.sae.train:train",
    estimate_memory="gpudeck.kinds.sae.memory:estimate_sae",
    # What memory.estimate_key reads (the trace's TraceSpec): not lr, betas, seed, schedules,
    # intervals, coefficients' magnitudes or the dataset. `steps` only decides whether the
    # TopK warm-up phase happens.
    estimate_fields=(
        "architecture",
        "d_in",
        "d_sae",
        "k",
        "dtype",
        "batch_size",
        "sparse_decoder",
        "grad_clip_norm",
        "aux_k_coefficient",
        "topk_warm_up_steps",
        "steps",
        "ddp.gradient_as_bucket_view",
    ),
    check_inputs="gpudeck.kinds.sae.data:check_inputs",
    settings_notes="gpudeck.kinds.sae.settings_notes:settings_notes",
    max_batch="gpudeck.kinds.sae.memory:max_batch_size",
    batch_size_field="batch_size",
    steps_field="steps",
    charts=(
        Chart(
            "Loss",
            (
                Series("overall_loss", "overall"),
                Series("mse_loss", "MSE"),
                Series("l1_loss", "L1"),  # standard
                Series("l0_loss", "L0 penalty"),  # jumprelu
                Series("auxk_loss", "AuxK"),  # topk, batchtopk
            ),
            log_y=True,
        ),
        Chart("L0 (active features per sample)", (Series("l0", "L0"),)),
        Chart("Explained variance", (Series("explained_variance", "explained variance"),)),
        Chart(
            "Dead latents (% of the dictionary)",
            (
                Series(
                    "dead_pct", "no firing in the last 1,000 training steps (or the run so far)"
                ),
                Series("heldout_dead_pct", "firing on no held-out row (at checkpoints)"),
            ),
        ),
        Chart(
            "Held-out rows (at checkpoints)",
            (
                Series("heldout_explained_variance", "explained variance"),
                Series("mmcs", "mmcs (synthetic data)"),
            ),
        ),
        Chart("Throughput", (Series("activations_per_s", "activations/s"),)),
    ),
    # The dashboard shows each one's latest value; the held-out ones come at checkpoints,
    # mmcs and features recovered with synthetic data only (the truth is known there).
    summary_metrics=(
        Series("overall_loss", "loss"),
        Series("l0", "L0"),
        Series("explained_variance", "explained var."),
        Series("heldout_dead_pct", "dead % (held-out rows)"),
        # counted over the last 1,000 steps, or the whole run where it is shorter
        Series("dead_features", "dead (training window)", window_metric="dead_window_steps"),
        Series("heldout_l0", "L0 (held-out)"),
        Series("heldout_explained_variance", "explained var. (held-out)"),
        Series("mmcs", "mmcs"),
        Series("features_recovered_pct", "features recovered %"),
    ),
    warm_estimate=True,
    expectations="gpudeck.kinds.sae.expectations:expectations",
    follow_up="gpudeck.kinds.sae.follow_up:evaluate_checkpoint",
)
