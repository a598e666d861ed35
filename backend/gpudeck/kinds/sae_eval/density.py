"""The feature-density histogram: how many latents fire on each share of the rows, by log10 of
that share (the plot SAE papers show), as one metric per bin so that the job's metrics carry
it and a bar chart draws it. Torch-free: the kind's charts are built from it."""

from __future__ import annotations

from gpudeck.engine.kinds import Series

# Lower edges of the bins of log10(firing frequency), each 0.5 wide; the last bin ends at 0
# (a latent firing on every row). Below the first edge, one bin; latents that fired on no
# row have their own.
BIN_EDGES = tuple(-6.0 + 0.5 * i for i in range(12))
NEVER = "density_never"


def bin_metric(index: int) -> str:
    """Bin 0 is below BIN_EDGES[0]; bin i > 0 starts at BIN_EDGES[i - 1]."""
    return f"density_bin_{index:02d}"


def _edge(value: float) -> str:
    return f"{value:g}"


SERIES = (
    Series(NEVER, "never"),
    Series(bin_metric(0), f"< {_edge(BIN_EDGES[0])}"),
    *(Series(bin_metric(i + 1), _edge(edge)) for i, edge in enumerate(BIN_EDGES)),
)
