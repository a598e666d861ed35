"""Every architecture under DDP, AuxK reviving dead latents, and the sparse decoder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from rankrunner import make_spec, run_ranks, tiny_config

from gpudeck.engine.checkpoint import latest_checkpoint, load_checkpoint
from gpudeck.kinds.sae.config import SaeConfig, SyntheticDataset
from gpudeck.kinds.sae.data import SyntheticSource
from gpudeck.kinds.sae.metrics import DeadLatents
from gpudeck.kinds.sae.model import sparse_decode, train_step
from gpudeck.kinds.sae.train import build_model

ARCHITECTURES = {
    "topk": {"architecture": "topk", "k": 4},
    "batchtopk": {"architecture": "batchtopk", "k": 4},
    "jumprelu": {"architecture": "jumprelu", "l0_coefficient": 0.05},
}


def _final(tmp: Path, config: dict, world: int) -> tuple[dict, dict]:
    spec = make_spec(tmp, config)
    assert run_ranks(spec, world) == [0] * world
    path = latest_checkpoint(spec.checkpoint_dir)
    assert path is not None and path.name == f"step_{config['steps']}"
    ckpt = load_checkpoint(path)
    return ckpt.weights, ckpt.state_tensors


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_two_ranks_half_batch_match_one_rank_full_batch(tmp_path: Path, architecture: str) -> None:
    """fp32, 50 steps. A dead window of 5 steps makes latents dead early, so AuxK (topk
    family) runs on a dead mask that must be the same on both ranks; BatchTopK's top k x B is
    global over the ranks, so its selection and running threshold match one rank's too."""
    config = tiny_config(**ARCHITECTURES[architecture], dead_window_steps=5)
    one, one_state = _final(tmp_path / "one", config, 1)
    two, two_state = _final(tmp_path / "two", config, 2)
    assert one.keys() == two.keys()
    assert max(float((one[k] - two[k]).abs().max()) for k in one) <= 1e-5
    if architecture == "batchtopk":
        threshold = one_state["buffer.topk_threshold"]
        assert float(threshold) > 0
        assert float((threshold - two_state["buffer.topk_threshold"]).abs()) <= 1e-6
    if architecture != "jumprelu":
        dead_one, dead_two = (s["dead.steps_since_fired"] for s in (one_state, two_state))
        assert torch.equal(dead_one, dead_two)


def _dead_after_training(aux_k_coefficient: float) -> int:
    """Half the latents start with b_enc -5, far below any winner of the top-k: dead by
    construction. Without AuxK no gradient reaches a latent that is never selected."""
    config = SaeConfig(d_in=16, d_sae=128, k=3, aux_k_coefficient=aux_k_coefficient)
    data = SyntheticDataset(num_features=48, active_features=3, num_samples=10**6)
    source = SyntheticSource(data, d_in=16, seed=0)
    model = build_model(config, torch.device("cpu"))
    with torch.no_grad():
        model.b_enc[64:] = -5.0
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    dead = DeadLatents(config.d_sae, window=10, device=torch.device("cpu"))
    for step in range(300):
        x = 4 * source.rows(torch.arange(step * 64, (step + 1) * 64))
        output = train_step(model, optimizer, x, coefficient=0.0, dead_mask=dead.mask())
        dead.observe(output.latents.fired(config.d_sae))
    held_out = 4 * source.rows(torch.arange(10**5, 10**5 + 4096))
    with torch.no_grad():
        fires = (model.encode(held_out) > 0).any(dim=0)
    return int((~fires).sum())


def test_auxk_revives_dead_latents() -> None:
    without = _dead_after_training(0.0)
    with_aux = _dead_after_training(SaeConfig().aux_k_coefficient)
    assert without >= 32, "the case must have many dead latents for the check to mean anything"
    assert with_aux <= without // 4, (with_aux, without)


def test_sparse_decode_equals_the_dense_matmul_forward_and_backward() -> None:
    gen = torch.Generator().manual_seed(0)
    batch, d_sae, d_in, k = 32, 200, 24, 7
    w_dec = torch.randn(d_sae, d_in, generator=gen, dtype=torch.float64)
    pre = torch.randn(batch, d_sae, generator=gen, dtype=torch.float64)
    grad_out = torch.randn(batch, d_in, generator=gen, dtype=torch.float64)

    def run(sparse: bool) -> tuple[torch.Tensor, ...]:
        w = w_dec.clone().requires_grad_()
        h = pre.clone().requires_grad_()
        top = torch.topk(h, k, dim=-1)
        values = top.values.relu()
        if sparse:
            out = sparse_decode(values, top.indices, w)
        else:
            dense = torch.zeros_like(h).scatter(1, top.indices, values)
            out = dense @ w
        out.backward(grad_out)
        assert w.grad is not None and h.grad is not None
        return out.detach(), w.grad, h.grad

    for got, want in zip(run(True), run(False), strict=True):
        assert torch.allclose(got, want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("architecture", ["topk", "batchtopk"])
def test_sparse_step_equals_the_dense_one_with_auxk(architecture: str) -> None:
    """The sparse path (pre-activations without a graph, gradient only into the selected and
    AuxK's entries; BatchTopK's variable count per sample decoded by offsets) gives the dense
    path's loss, every parameter's gradient and BatchTopK's running threshold."""
    x = torch.randn(64, 24, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    dead = torch.zeros(200, dtype=torch.bool)
    dead[::3] = True

    def run(sparse: bool) -> list[torch.Tensor]:
        config = SaeConfig(
            architecture=architecture, d_in=24, d_sae=200, k=7, sparse_decoder=sparse, seed=1
        )
        model = build_model(config, torch.device("cpu")).double()
        with torch.no_grad():  # non-zero biases, so their gradient terms count
            model.b_dec.copy_(x.mean(0))
            model.b_enc.normal_(generator=torch.Generator().manual_seed(2))
        out = model(x, 0.0, dead)
        out.loss.backward()
        assert out.aux_loss > 0
        assert float(out.latents.active_count()) == pytest.approx(7 * 64, abs=2)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        return [out.loss.detach(), *grads, *model.buffers()]

    sparse, dense = run(True), run(False)
    assert len(sparse) == len(dense) == (6 if architecture == "batchtopk" else 5)
    for got, want in zip(sparse, dense, strict=True):
        assert torch.allclose(got, want, atol=1e-12, rtol=0)
