"""What an SAE job should show, read from its config before it runs: the L0 its architecture
gives (exact for TopK, a batch average for BatchTopK, steered towards k for JumpReLU with its
TopK warm-up, learned otherwise), the size of its dictionary against the activation width,
and warnings for configurations known to train dense or to leave many latents dead (measured
on synthetic superposition data, docs/sae.md). The form shows these beside the memory
estimate."""

from __future__ import annotations

from gpudeck.engine.kinds import Expectation
from gpudeck.kinds.sae.config import L0_COEFFICIENT_PER_D_IN, SaeConfig

# Below this share of its default (d_in / 64) JumpReLU's L0 penalty is too weak to hold L0
# near k: at 0.01 with d_in 64 (0.02 of the default) it trained to L0 85.
WEAK_L0_COEFFICIENT_SHARE = 0.1


def expected_l0(config: SaeConfig) -> Expectation:
    if config.architecture == "topk":
        return Expectation("expected L0", str(config.k), "exactly k latents on every sample")
    if config.architecture == "batchtopk":
        return Expectation(
            "expected L0",
            str(config.k),
            "k per sample on average: the batch's k x batch largest, so a sample may have more",
        )
    if config.architecture == "jumprelu" and config.topk_warm_up_length() > 0:
        return Expectation(
            "expected L0",
            f"about {config.k}",
            "the TopK warm-up starts every threshold at the k-th largest pre-activation; the"
            f" L0 penalty ({config.l0_coefficient_value:g}) then keeps L0 near k: raise"
            " l0_coefficient for fewer active latents",
        )
    coefficient = "l0_coefficient" if config.architecture == "jumprelu" else "l1_coefficient"
    return Expectation(
        "expected L0",
        "learned",
        f"{config.architecture} finds its own L0: raise {coefficient} for fewer active latents;"
        " the L0 chart shows it as the job trains",
    )


def dictionary(config: SaeConfig) -> Expectation:
    ratio = config.d_sae / config.d_in
    shown = f"{ratio:.0f}" if ratio == int(ratio) else f"{ratio:.2f}"
    return Expectation(
        "dictionary", f"{config.d_sae:,} latents ({shown} x d_in)", "8 to 32 x d_in is usual"
    )


def warnings(config: SaeConfig) -> list[Expectation]:
    """Configurations measured to train badly, and what to change (docs/sae.md)."""
    found: list[str] = []
    warm_up = config.topk_warm_up_length()
    if config.architecture == "jumprelu":
        if warm_up == 0:
            found.append(
                "JumpReLU without the TopK warm-up trained dense on the benchmark (L0 85 at"
                " coefficient 0.01, mmcs 0.38): leave topk_warm_up_steps empty (half the"
                " run) so L0 starts at k"
            )
        weak = WEAK_L0_COEFFICIENT_SHARE * L0_COEFFICIENT_PER_D_IN * config.d_in
        if config.l0_coefficient_value < weak:
            found.append(
                f"l0_coefficient {config.l0_coefficient_value:g} is too weak to hold L0 near k"
                f" at d_in {config.d_in} (L0 climbs as it trains): leave it empty"
                f" (d_in / 64 = {config.d_in / 64:g})"
            )
    if config.architecture == "batchtopk":
        if warm_up == 0:
            found.append(
                "BatchTopK without the TopK warm-up left 16 to 25 % of latents dead and merged"
                " pairs of features on the benchmark: leave topk_warm_up_steps empty (half the"
                " run)"
            )
        elif config.dead_min_frequency_value == 0:
            found.append(
                "without dead_min_frequency about 7 % of latents stayed dead after the warm-up:"
                f" leave it empty (k / d_sae / 100 = {config.dead_min_frequency_default:.2g})"
            )
    return [Expectation("warning", "trains badly", note, warning=True) for note in found]


def checkpoints(config: SaeConfig) -> list[Expectation]:
    """A checkpoint interval as long as the run: only the final checkpoint is written (a
    400-step run at the default 500 had none to resume from or evaluate along the way)."""
    if config.checkpoint_interval < config.steps:
        return []
    return [
        Expectation(
            "checkpoints",
            f"the final one only (step {config.steps:,})",
            f"checkpoint every {config.checkpoint_interval:,} steps is not shorter than the run"
            f" ({config.steps:,} steps): rank 0 writes one checkpoint, at the end, and the"
            " held-out figures come with it; lower checkpoint_interval for checkpoints to"
            " resume from or evaluate along the way",
            warning=True,
        )
    ]


def expectations(config: SaeConfig) -> list[Expectation]:
    return [expected_l0(config), dictionary(config), *warnings(config), *checkpoints(config)]
