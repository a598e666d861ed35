"""The held-out pass (kinds/sae/heldout.py): chunks sized by memory that never raise a job's
peak above its estimate, and the sparse decode giving the dense figures (issue 33: chunks of
a quarter of the training batch made a batch of 32 take 2,048 chunks, 11.2 s a checkpoint)."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker

from gpudeck.kinds.sae.arch import build_sae
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.heldout import (
    HELDOUT_ROWS,
    SPARSE_DECODE_MIN_D_IN,
    _decode,
    chunk_rows,
    evaluate,
    score,
)
from gpudeck.kinds.sae.memory import trace_spec
from gpudeck.kinds.sae.memory_trace import _allocator_rounding, tensor_bytes, trace
from gpudeck.kinds.sae.train import build_model

ARCHITECTURES = ("standard", "topk", "batchtopk", "jumprelu")


def _scoring_bytes(config: SaeConfig, rows: int, block_bytes: int) -> int:
    """The peak a held-out chunk of `rows` adds to the model's own bytes, traced on fake
    tensors (the chunk counted as if copied to the device)."""
    with _allocator_rounding(block_bytes), FakeTensorMode():
        model = build_sae(config)
        chunk = torch.empty(rows, config.d_in)  # raw rows, float32, as read
        tracker = MemTracker()
        tracker.track_external(model, chunk)
        with tracker:
            score(model, [chunk], scale=2.0, device=torch.device("cpu"))
        (peak,) = tracker.get_tracker_snapshot("peak").values()
        weights = [*model.parameters(), *model.buffers()]
        return int(peak["Total"]) - sum(tensor_bytes(t, block_bytes) for t in weights)


# (architecture, dtype, d_in, d_sae): every architecture at the defaults' shape, the two
# widest encodes in bfloat16 too, and a dictionary 128 times d_in.
CASES = [(a, "float32", 64, 512) for a in ARCHITECTURES] + [
    ("jumprelu", "bfloat16", 64, 512),
    ("topk", "bfloat16", 64, 512),
    ("jumprelu", "float32", 16, 2048),
    ("standard", "float32", 16, 2048),
]


@pytest.mark.parametrize("device_type", ["cpu", "cuda"])
@pytest.mark.parametrize("world_size", [1, 2])  # the bare model, DDP
@pytest.mark.parametrize("batch", [1, 4096])  # the weights bound the chunk, then the batch
@pytest.mark.parametrize(("architecture", "dtype", "d_in", "d_sae"), CASES)
def test_a_chunk_fits_in_what_the_training_step_frees(
    architecture: str,
    dtype: str,
    d_in: int,
    d_sae: int,
    batch: int,
    device_type: str,
    world_size: int,
) -> None:
    """What outlives the step (weights, Adam's state, DDP's buckets) plus a chunk's scoring stays
    within the step's traced peak, and from step 3 within the peak and the old DDP bucket the
    estimate adds to it (`batch` per rank): the pass never raises the job's peak above the estimate.
    The trace runs on fake tensors (CUDA's rounding and foreach Adam for "cuda"), so no GPU is
    needed."""
    config = SaeConfig(
        architecture=architecture,  # type: ignore[arg-type]
        d_in=d_in,
        d_sae=d_sae,
        batch_size=batch * world_size,
        dtype=dtype,  # type: ignore[arg-type]
    )
    spec = trace_spec(config, batch, device_type, world_size=world_size)  # type: ignore[arg-type]
    step = trace(spec)
    outlives = step.parameter_bytes + step.optimizer_state_bytes + step.bucket_bytes
    model, block_bytes = build_sae(config), 512 if device_type == "cuda" else 1
    early, later = (chunk_rows(model, batch, step=n, ddp=world_size > 1) for n in (2, 3))
    assert outlives + _scoring_bytes(config, early, block_bytes) <= step.peak_bytes, early
    with_bucket = step.peak_bytes + step.rebuild_bytes
    assert outlives + _scoring_bytes(config, later, block_bytes) <= with_bucket, later


def test_the_chunk_is_sized_by_memory_not_by_the_training_batch() -> None:
    model = build_sae(SaeConfig())  # the defaults: TopK, d_in 64, d_sae 512
    small = chunk_rows(model, 32, step=500, ddp=True)
    # A small batch's step still frees Adam's temporaries of a weight: many rows fit.
    assert small == chunk_rows(model, 1, step=500, ddp=True)
    assert HELDOUT_ROWS // small <= 256  # the old rule, a quarter of the batch: 2,048 chunks
    assert chunk_rows(model, 32, step=2, ddp=True) < small  # the old DDP bucket may be there
    alone = chunk_rows(model, 32, step=500, ddp=False)  # one rank: no DDP, no bucket
    assert alone < small and alone == chunk_rows(model, 32, step=2, ddp=False)
    assert chunk_rows(model, 4096, step=500, ddp=True) > small  # the forward's pre-activations
    assert chunk_rows(model, 1_048_576, step=500, ddp=True) == HELDOUT_ROWS


@torch.no_grad()
def test_the_sparse_decode_gives_the_dense_figures() -> None:
    """On the CPU a sparse chunk is decoded as a CSR product; the figures are the dense
    product's, which SAELens computes."""
    config = SaeConfig(architecture="topk", d_in=SPARSE_DECODE_MIN_D_IN, d_sae=1024, k=4)
    model = build_model(config, torch.device("cpu")).eval()
    gen = torch.Generator().manual_seed(0)
    rows = torch.randn(2000, config.d_in, generator=gen).relu()
    acts = model.encode(rows)
    nonzero = int((acts != 0).sum())
    assert nonzero <= acts.numel() / 8  # sparse enough for the CSR product
    torch.testing.assert_close(_decode(model, acts, nonzero), model.decode(acts))
    chunk = chunk_rows(model, 64, step=500, ddp=True)
    got = evaluate(model, rows, scale=1.0, chunk=chunk, device=torch.device("cpu"))
    x_hat, x64 = model.decode(acts).double(), rows.double()
    variance = float((x64 - x64.mean(0)).pow(2).sum())
    assert got["heldout_l0"] == pytest.approx(nonzero / len(rows), rel=1e-12)
    dead = float(((acts != 0).sum(0) == 0).sum()) / config.d_sae * 100
    assert got["heldout_dead_pct"] == pytest.approx(dead, abs=1e-12)
    explained = 1 - float((x_hat - x64).pow(2).sum()) / variance
    assert got["heldout_explained_variance"] == pytest.approx(explained, rel=1e-6)
