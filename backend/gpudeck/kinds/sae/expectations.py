"""What an SAE job should show, read from its config before it runs: the L0 its architecture
gives (exact for TopK, a batch average for BatchTopK, learned for the others) and the size of its
dictionary against the activation width. The form shows these beside the memory estimate."""

from __future__ import annotations

from gpudeck.engine.kinds import Expectation
from gpudeck.kinds.sae.config import SaeConfig


def expected_l0(config: SaeConfig) -> Expectation:
    if config.architecture == "topk":
        return Expectation("expected L0", str(config.k), "exactly k latents on every sample")
    if config.architecture == "batchtopk":
        return Expectation(
            "expected L0",
            str(config.k),
            "k per sample on average: the batch's k x batch largest, so a sample may have more",
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


def expectations(config: SaeConfig) -> list[Expectation]:
    return [expected_l0(config), dictionary(config)]
