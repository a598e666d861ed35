"""The candidate kernels of the sparse TopK step, one CPU thread, at the throughput bench's shape.

    cd backend && ../.venv/bin/python ../bench/sae_sparse_kernels.py

Decoder forward: embedding_bag vs index_select + bmm. W_enc's gradient from k entries per
sample: the dense path (zero-filled [B, d_sae] gradient, x^T @ G) vs index_add_ of the B * k
products vs one CSR product (model.scatter_rows, what the trainer uses). Medians of 3 after a
warm-up; the ratios are against the dense path measured in the same run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from gpudeck.kinds.sae.model import scatter_rows

B, D_IN, D_SAE, K = 4096, 512, 16384, 32


def median_s(fn: Callable[[], torch.Tensor], runs: int = 3) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(B, D_IN, generator=gen)
    w_dec = torch.randn(D_SAE, D_IN, generator=gen)
    # Distinct latents per sample, as top-k gives them.
    idx = torch.rand(B, D_SAE, generator=gen).topk(K, dim=1).indices
    values = torch.randn(B, K, generator=gen)

    def dense_grad() -> torch.Tensor:
        return x.t() @ torch.zeros(B, D_SAE).scatter_(1, idx, values)

    def index_add_grad() -> torch.Tensor:
        products = (values[:, :, None] * x[:, None, :]).reshape(-1, D_IN)
        return torch.zeros(D_SAE, D_IN).index_add_(0, idx.flatten(), products).t()

    def csr_grad() -> torch.Tensor:
        return scatter_rows(idx, values, x, D_SAE).t()

    want = dense_grad()
    for fn in (index_add_grad, csr_grad):
        assert torch.allclose(fn(), want, atol=1e-3), fn.__name__

    print(f"shape: B {B}, d_in {D_IN}, d_sae {D_SAE}, k {K}, fp32, 1 thread")
    dense = median_s(dense_grad)
    print(f"W_enc grad, dense zero-fill + x^T G : {dense * 1e3:8.1f} ms")
    for name, fn in (
        ("index_add_ of B*k products", index_add_grad),
        ("CSR product", csr_grad),
    ):
        t = median_s(fn)
        print(f"W_enc grad, {name:24s}: {t * 1e3:8.1f} ms  ({dense / t:.1f}x dense)")
    bag = median_s(lambda: F.embedding_bag(idx, w_dec, per_sample_weights=values, mode="sum"))
    rows = median_s(
        lambda: torch.bmm(
            values[:, None, :], w_dec.index_select(0, idx.flatten()).view(B, K, D_IN)
        ).squeeze(1)
    )
    print(f"decode, embedding_bag               : {bag * 1e3:8.1f} ms")
    print(f"decode, index_select + bmm          : {rows * 1e3:8.1f} ms  ({rows / bag:.1f}x slower)")


if __name__ == "__main__":
    main()
