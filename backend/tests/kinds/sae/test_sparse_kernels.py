"""The sparse TopK path in the dtype the trainer runs it in, on the CPU and (gpu-marked) on
CUDA, and bfloat16's dense fallback.

Each kernel of the path (model.py: the gather decoder, BatchTopK's offsets decoder, the CSR
scatter `scatter_rows`, the encoder's sparse backward `gathered_preact`) and then a whole step
of each architecture is compared with the dense computation in float64 on the same inputs:
the exact answer, which float32 must come close to. A kernel that raises fails naming itself,
the device and the dtype.

The sparse path runs in float32 only (SaeConfig.sparse_kernels): bfloat16 lacks kernels on
both devices (CUDA: "_embedding_bag_per_sample_weights_backward_cuda" not implemented for
'BFloat16', the decoder's backward, seen on an H200 with torch 2.11; CPU: the CSR product,
"addmm_out_sparse_csr_impl_mkl"). A bfloat16 TopK config therefore decodes densely, and every
architecture trains in bfloat16 on both devices.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
from cuda_cases import CPU_AND_CUDA, device_for

from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.model import (
    Latents,
    Sae,
    gathered_preact,
    scatter_rows,
    sparse_decode,
    train_step,
)
from gpudeck.kinds.sae.train import build_model, set_topk_warm_up

CASES = [
    pytest.param("cpu", torch.float32, id="cpu-float32"),
    pytest.param("cuda", torch.float32, id="cuda-float32", marks=pytest.mark.gpu),
]
# Relative error (Frobenius norm) allowed against float64. bfloat16 keeps 8 bits of mantissa:
# one rounding is up to 2**-9 = 0.2 %; a step chains a few dozen of them.
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}
BATCH, D_IN, D_SAE, K = 64, 256, 200, 7


@contextmanager
def kernel(name: str, device: torch.device, dtype: torch.dtype) -> Iterator[None]:
    """Name the kernel that raised (a dtype or device it has no implementation for)."""
    try:
        yield
    except (NotImplementedError, RuntimeError) as exc:
        pytest.fail(f"{name} on {device.type} in {dtype} raised {type(exc).__name__}: {exc}")


def assert_near(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.isfinite(got).all(), f"{what}: not finite in {dtype}"
    error = float((got - want).norm() / want.norm().clamp_min(1e-30))
    assert error <= TOLERANCE[dtype], f"{what} in {dtype}: relative error {error:.2e}"


def _random(*shape: int, seed: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device, dtype)


def _top_indices(seed: int, device: torch.device) -> torch.Tensor:
    """[BATCH, K] distinct latents per sample."""
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(BATCH, D_SAE, generator=gen).argsort(dim=1)[:, :K].to(device)


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_()


def _grads(*leaves: torch.Tensor) -> list[torch.Tensor]:
    assert all(t.grad is not None for t in leaves)
    return [t.grad for t in leaves if t.grad is not None]


@pytest.mark.parametrize(("device_name", "dtype"), CASES)
def test_gather_decoder_matches_dense_matmul(device_name: str, dtype: torch.dtype) -> None:
    """sparse_decode (embedding_bag with per-sample weights): TopK's decoder and AuxK's."""
    device = device_for(device_name)
    indices = _top_indices(0, device)
    values, w_dec = (
        _random(BATCH, K, seed=1, device=device, dtype=dtype),
        _random(D_SAE, D_IN, seed=2, device=device, dtype=dtype),
    )
    grad_out = _random(BATCH, D_IN, seed=3, device=device, dtype=dtype)
    v, w = _leaf(values), _leaf(w_dec)
    with kernel("sparse_decode (embedding_bag, per_sample_weights)", device, dtype):
        out = sparse_decode(v, indices, w)
        out.backward(grad_out)
    v64, w64 = _leaf(values.cpu().double()), _leaf(w_dec.cpu().double())
    want = torch.zeros(BATCH, D_SAE, dtype=torch.float64).scatter(1, indices.cpu(), v64) @ w64
    want.backward(grad_out.cpu().double())
    for what, got, ref in zip(
        ("output", "values' grad", "W_dec's grad"),
        [out, *_grads(v, w)],
        [want, *_grads(v64, w64)],
        strict=True,
    ):
        assert_near(got, ref, dtype, f"sparse_decode {what}")


@pytest.mark.parametrize(("device_name", "dtype"), CASES)
def test_offsets_decoder_matches_dense_matmul(device_name: str, dtype: torch.dtype) -> None:
    """Sae.decode_latents with offsets: BatchTopK's variable count of latents per sample."""
    device = device_for(device_name)
    sae = build_model(_config("batchtopk", dtype), device)
    gen = torch.Generator().manual_seed(4)
    counts = torch.arange(BATCH) % (2 * K)  # 0 to 2k latents per sample, some with none
    samples = torch.repeat_interleave(torch.arange(BATCH), counts)
    latents = torch.cat([torch.randperm(D_SAE, generator=gen)[:n] for n in counts.tolist()])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
    values = _random(len(samples), seed=4, device=device, dtype=dtype)
    grad_out = _random(BATCH, D_IN, seed=5, device=device, dtype=dtype)
    v = _leaf(values)
    with kernel("decode_latents (embedding_bag with offsets)", device, dtype):
        out = sae.decode_latents(Latents(v, latents.to(device), offsets.to(device)))
        out.backward(grad_out)
    params = [sae.W_dec, sae.b_dec]
    v64 = _leaf(values.cpu().double())
    w64, b64 = (_leaf(p.cpu().double()) for p in params)
    dense = torch.zeros(BATCH, D_SAE, dtype=torch.float64).index_put((samples, latents), v64)
    want = dense @ w64 + b64
    want.backward(grad_out.cpu().double())
    for what, got, ref in zip(
        ("output", "values' grad", "W_dec's grad", "b_dec's grad"),
        [out, *_grads(v, *params)],
        [want, *_grads(v64, w64, b64)],
        strict=True,
    ):
        assert_near(got, ref, dtype, f"decode_latents {what}")


@pytest.mark.parametrize("flat", [False, True], ids=["per-sample", "flat"])
@pytest.mark.parametrize(("device_name", "dtype"), CASES)
def test_scatter_rows_matches_dense_product(
    device_name: str, dtype: torch.dtype, flat: bool
) -> None:
    """The CSR [num_rows, B] x dense [B, d] product of the sparse encoder backward."""
    device = device_for(device_name)
    indices = _top_indices(6, device)
    weights = _random(BATCH, K, seed=7, device=device, dtype=dtype)
    rows = _random(BATCH, D_IN + 1, seed=8, device=device, dtype=dtype)
    samples = torch.arange(BATCH, device=device).repeat_interleave(K)
    with kernel("scatter_rows (sparse CSR @ dense)", device, dtype):
        if flat:
            got = scatter_rows(indices.flatten(), weights.flatten(), rows, D_SAE, samples)
        else:
            got = scatter_rows(indices, weights, rows, D_SAE)
    matrix = torch.zeros(D_SAE, BATCH, dtype=torch.float64)
    matrix.index_put_(
        (indices.cpu().flatten(), samples.cpu()), weights.cpu().double().flatten(), accumulate=True
    )
    assert_near(got, matrix @ rows.cpu().double(), dtype, "scatter_rows")


@pytest.mark.parametrize("flat", [False, True], ids=["per-sample", "flat"])
@pytest.mark.parametrize(("device_name", "dtype"), CASES)
def test_gathered_preact_backward_matches_dense(
    device_name: str, dtype: torch.dtype, flat: bool
) -> None:
    """The encoder's sparse backward: only the gathered pre-activations get gradient; the
    flat form (BatchTopK) gives none to the input."""
    device = device_for(device_name)
    sae = build_model(_config("topk", dtype), device)
    with torch.no_grad():  # non-zero biases, so their gradient terms count
        sae.b_dec.copy_(_random(D_IN, seed=9, device=device, dtype=dtype))
        sae.b_enc.copy_(_random(D_SAE, seed=10, device=device, dtype=dtype))
    indices = _top_indices(11, device)
    samples = torch.arange(BATCH, device=device).repeat_interleave(K) if flat else None
    x = _random(BATCH, D_IN, seed=12, device=device, dtype=dtype).requires_grad_(not flat)
    grad = _random(BATCH * K, seed=13, device=device, dtype=dtype)
    with kernel("gathered_preact backward (scatter_rows, sparse_decode)", device, dtype):
        pre = sae.hidden_pre_nograd(x)
        if flat:
            got = gathered_preact(sae, x, pre, indices.flatten(), samples)
        else:
            got = gathered_preact(sae, x, pre, indices)
        got.backward(grad.view_as(got))
    leaves = [sae.W_enc, sae.b_enc, sae.b_dec] + ([] if flat else [x])
    ref = [_leaf(t.cpu().double()) for t in leaves]
    w_enc, b_enc, b_dec = ref[:3]
    x64 = x.detach().cpu().double() if flat else ref[3]
    want = (x64 @ w_enc - b_dec @ w_enc + b_enc).gather(1, indices.cpu())  # hidden_pre_train
    want.backward(grad.cpu().double().view_as(want))
    assert_near(got, want.flatten() if flat else want, dtype, "gathered_preact output")
    names = ["W_enc's grad", "b_enc's grad", "b_dec's grad", "x's grad"]
    for what, g, r in zip(names, _grads(*leaves), _grads(*ref), strict=False):
        assert_near(g, r, dtype, f"gathered_preact {what}")


def _config(architecture: str, dtype: torch.dtype, *, sparse: bool = True) -> SaeConfig:
    return SaeConfig(
        architecture=architecture,  # type: ignore[arg-type]
        d_in=D_IN,
        d_sae=D_SAE,
        k=K,
        sparse_decoder=sparse,
        dtype="bfloat16" if dtype == torch.bfloat16 else "float32",
        seed=1,
    )


def _planted(
    device: torch.device, dtype: torch.dtype
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Weights and a batch whose selection no rounding can change: each sample is K planted
    latents (coefficients 1 to 2) along orthonormal decoder rows, the encoder half their
    transpose plus noise, so planted pre-activations sit near 0.5-1 and the rest near 0. A
    selection that differed between dtypes would make the comparison meaningless."""
    gen = torch.Generator().manual_seed(20)
    q, _ = torch.linalg.qr(torch.randn(D_IN, D_SAE, generator=gen, dtype=torch.float64))
    weights = {
        "W_dec": q.T.contiguous(),
        "W_enc": 0.5 * q + 0.001 * torch.randn(D_IN, D_SAE, generator=gen, dtype=torch.float64),
        "b_enc": 0.02 * torch.randn(D_SAE, generator=gen, dtype=torch.float64),
    }
    coefficients = torch.zeros(BATCH, D_SAE, dtype=torch.float64)
    coefficients.scatter_(
        1,
        _top_indices(21, torch.device("cpu")),
        1 + torch.rand(BATCH, K, generator=gen, dtype=torch.float64),
    )
    x = coefficients @ weights["W_dec"] + 0.01 * torch.randn(
        BATCH, D_IN, generator=gen, dtype=torch.float64
    )
    weights["b_dec"] = x.mean(0)
    cast = {name: w.to(device, dtype) for name, w in weights.items()}
    return cast, x.to(device, dtype)


def _step(
    sae: Sae, weights: dict[str, torch.Tensor], x: torch.Tensor, dead: torch.Tensor
) -> list[torch.Tensor]:
    with torch.no_grad():
        for name, p in sae.named_parameters():
            p.copy_(weights[name])
    out = sae(x, 0.0, dead)
    out.loss.backward()
    grads = [p.grad for _, p in sorted(sae.named_parameters()) if p.grad is not None]
    assert len(grads) == 4
    return [out.sae_out, out.mse_loss, out.aux_loss, *grads, *sae.buffers()]


def _assert_clear_selection(pre: torch.Tensor) -> None:
    """Planted pre-activations above all others, per sample (TopK) and over the batch
    (BatchTopK), by a margin no rounding crosses: both paths then select the same latents."""
    pre = pre.detach()
    per_sample = pre.sort(dim=1, descending=True).values
    assert float((per_sample[:, K - 1] - per_sample[:, K]).min()) > 0.1
    overall = pre.flatten().sort(descending=True).values
    assert float(overall[BATCH * K - 1] - overall[BATCH * K]) > 0.1


STEP_OUTPUTS = [
    "sae_out",
    "mse_loss",
    "aux_loss",
    "W_dec's grad",
    "W_enc's grad",
    "b_dec's grad",
    "b_enc's grad",
    "buffer",
]


@pytest.mark.parametrize("architecture", ["topk", "batchtopk"])
@pytest.mark.parametrize(("device_name", "dtype"), CASES)
def test_sparse_step_matches_dense_float64(
    device_name: str, dtype: torch.dtype, architecture: str
) -> None:
    """A whole forward and backward of the trainer's sparse path (with AuxK on every third
    latent dead) against the dense path in float64 from the same rounded weights and batch."""
    device = device_for(device_name)
    weights, x = _planted(device, dtype)
    dead = torch.zeros(D_SAE, dtype=torch.bool, device=device)
    dead[::3] = True
    sparse = build_model(_config(architecture, dtype), device)
    with kernel(f"the sparse {architecture} step (forward and backward)", device, dtype):
        got = _step(sparse, weights, x, dead)
    dense = build_model(_config(architecture, torch.float32, sparse=False), torch.device("cpu"))
    weights64 = {name: w.cpu().double() for name, w in weights.items()}
    want = _step(dense.double(), weights64, x.cpu().double(), dead.cpu())
    _assert_clear_selection(dense.hidden_pre(x.cpu().double()))
    assert float(want[2].detach()) > 0, "AuxK must take part"
    for what, g, w in zip(STEP_OUTPUTS, got, want, strict=False):
        assert_near(g, w, dtype, f"{architecture} {what}")


@pytest.mark.parametrize("architecture", ["standard", "topk", "batchtopk", "jumprelu"])
@pytest.mark.parametrize("device_name", CPU_AND_CUDA)
def test_bfloat16_trains_every_architecture(device_name: str, architecture: str) -> None:
    """The default config in bfloat16 once stopped at its first step (no bf16 sparse kernels):
    now the TopK family decodes densely there, and every architecture takes finite steps."""
    device = device_for(device_name)
    config = SaeConfig(
        architecture=architecture,  # type: ignore[arg-type]
        d_in=D_IN,
        d_sae=D_SAE,
        k=K,
        batch_size=BATCH,
        dtype="bfloat16",
    )
    assert config.sparse_decoder and not config.sparse_kernels
    model = build_model(config, device)
    if architecture == "jumprelu":  # its TopK warm-up selects like TopK, densely in bfloat16
        warm = config.model_copy(update={"topk_warm_up_steps": 10})
        model = build_model(warm, device)
        set_topk_warm_up(model, warm, step=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    x = _random(BATCH, D_IN, seed=3, device=device, dtype=torch.bfloat16)
    dead = torch.arange(D_SAE, device=device) % 3 == 0  # AuxK on, for the TopK family
    for _ in range(2):
        output = train_step(
            model, optimizer, x, coefficient=config.sparsity_coefficient, dead_mask=dead
        )
        assert torch.isfinite(output.loss), f"{architecture} on {device}: loss {output.loss}"
    assert all(torch.isfinite(p).all() for p in model.parameters())
