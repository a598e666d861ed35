"""Every architecture under DDP, AuxK reviving dead latents, and the sparse decoder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cuda_cases import CPU_AND_CUDA, device_for
from rankrunner import make_spec, run_ranks, tiny_config

from gpudeck.engine.checkpoint import latest_checkpoint
from gpudeck.kinds.sae.arch import JumpReluSae
from gpudeck.kinds.sae.checkpoint import load as load_checkpoint
from gpudeck.kinds.sae.config import Architecture, SaeConfig, SyntheticDataset
from gpudeck.kinds.sae.data import SyntheticSource
from gpudeck.kinds.sae.metrics import DeadLatents
from gpudeck.kinds.sae.model import Latents, sparse_decode, train_step
from gpudeck.kinds.sae.train import build_model, set_topk_warm_up

ARCHITECTURES = {
    "topk": {"architecture": "topk", "k": 4},
    "batchtopk": {"architecture": "batchtopk", "k": 4},
    "jumprelu": {"architecture": "jumprelu", "l0_coefficient": 0.05},
    # The TopK warm-up's switch at step 20, mid-run (its running threshold is global too), and
    # the frequency rule for dead latents (its counts are summed over the ranks).
    "batchtopk warm-up": {
        "architecture": "batchtopk",
        "k": 4,
        "topk_warm_up_steps": 20,
        "dead_min_frequency": 0.02,
    },
    "jumprelu warm-up": {
        "architecture": "jumprelu",
        "l0_coefficient": 0.05,
        "k": 4,
        "topk_warm_up_steps": 20,
    },
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
    if architecture.startswith("batchtopk"):
        threshold = one_state["buffer.topk_threshold"]
        assert float(threshold) > 0
        assert float((threshold - two_state["buffer.topk_threshold"]).abs()) <= 1e-6
    if architecture == "jumprelu warm-up":
        threshold = one_state["buffer.running_threshold"]
        assert float(threshold) > 0
        assert float((threshold - two_state["buffer.running_threshold"]).abs()) <= 1e-6
    if not architecture.startswith("jumprelu"):
        dead_one, dead_two = (s["dead.steps_since_fired"] for s in (one_state, two_state))
        assert torch.equal(dead_one, dead_two)
        freq_one, freq_two = (s["dead.frequency"] for s in (one_state, two_state))
        assert float((freq_one - freq_two).abs().max()) <= 1e-12
        if architecture == "batchtopk warm-up":
            assert bool((freq_one < 0.02).any()), "the rule must mark some latent for the check"


@pytest.mark.parametrize("architecture", ["batchtopk", "jumprelu"])
def test_topk_warm_up_selects_k_per_sample_then_switches(architecture: Architecture) -> None:
    """The trainer's switch, by step: at most k latents per sample while warming up, then the
    architecture's own variable count; JumpReLU's thresholds start where the running k x B-th
    largest pre-activation ended (far from their 0.01 init). Without the option (or with the
    warm-up ignored) every count would vary from the first step."""
    data = SyntheticDataset(num_features=48, active_features=3, num_samples=10**5)
    config = SaeConfig(
        architecture=architecture,
        d_in=16,
        d_sae=64,
        k=3,
        batch_size=256,
        steps=30,
        topk_warm_up_steps=20,
        l0_coefficient=0.05,
        dataset=data,
    )
    source = SyntheticSource(data, d_in=16, seed=0)
    model = build_model(config, torch.device("cpu"))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    most = []
    for step in range(config.steps):
        set_topk_warm_up(model, config, step)
        if step == config.topk_warm_up_steps and isinstance(model, JumpReluSae):
            running = float(model.running_threshold)
            assert running > 0.2
            assert torch.equal(model.threshold.detach(), torch.full((64,), running))
        x = 4 * source.rows(torch.arange(step * 256, (step + 1) * 256))
        output = train_step(model, optimizer, x, coefficient=config.l0_coefficient)
        counts = (output.latents.dense(config.d_sae) > 0).sum(dim=1)
        most.append(int(counts.max()))
    # At most k per sample (fewer where a top-k pre-activation is negative); more after.
    assert max(most[:20]) == 3, most[:20]
    assert max(most[20:]) > 3, most[20:]


def test_batchtopk_counts_alive_only_what_its_saved_model_fires() -> None:
    """The batch's k x B largest can include a latent's small values that the saved model's
    running threshold silences: the trainer counts such a latent not fired (so AuxK revives
    it), and the count agrees with the saved encode on the same pre-activations."""
    config = SaeConfig(architecture="batchtopk", d_in=4, d_sae=3, k=1)
    model = build_model(config, torch.device("cpu"))
    with torch.no_grad():
        model.W_enc.copy_(torch.eye(4)[:, :3])
        model.b_enc.zero_()
        model.b_dec.zero_()
        model.topk_threshold.fill_(1.0)
    x = torch.tensor([[0.5, 2.0, 0.0, 0.0], [0.7, 0.0, 3.0, 0.0]])
    # What the batch's top 2 of 6 selects in training would be 2.0 and 3.0; take latent 0's
    # 0.5 and 0.7 selected too (a batch whose k x B-th largest is low).
    selected = Latents(torch.tensor([[0.5, 2.0, 0.0], [0.7, 0.0, 3.0]]))
    assert selected.fire_counts(3).tolist() == [2.0, 1.0, 1.0]
    alive = selected.fire_counts(3, above=model.firing_threshold())
    assert alive.tolist() == [0.0, 1.0, 1.0]
    with torch.no_grad():
        saved_fires = (model.encode(x) > 0).sum(dim=0).double()
    assert saved_fires.tolist() == alive.tolist()
    # TopK's saved encode fires whatever training selects: no threshold of its own.
    assert (
        build_model(
            SaeConfig(architecture="topk", d_in=4, d_sae=3, k=1), torch.device("cpu")
        ).firing_threshold()
        is None
    )


def test_dead_by_frequency_marks_latents_that_fire_rarely() -> None:
    """A latent firing on 1 sample of 1,000 every step is never dead by the window, but is
    below a minimum frequency of 1 %; one firing on half the samples is not."""
    cpu = torch.device("cpu")
    dead = DeadLatents(3, window=10, device=cpu, min_frequency=0.01, global_batch=1000)
    counts = torch.tensor([500.0, 1.0, 0.0], dtype=torch.float64)
    for _ in range(5):
        dead.observe(counts)
    mask = dead.mask()
    assert mask is not None and mask.tolist() == [False, True, True]
    window_only = DeadLatents(3, window=10, device=cpu)
    for _ in range(5):
        window_only.observe(counts)
    assert window_only.mask() is None  # nothing is dead after 5 of a 10-step window


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
        dead.observe(output.latents.fire_counts(config.d_sae))
    held_out = 4 * source.rows(torch.arange(10**5, 10**5 + 4096))
    with torch.no_grad():
        fires = (model.encode(held_out) > 0).any(dim=0)
    return int((~fires).sum())


def test_auxk_revives_dead_latents() -> None:
    without = _dead_after_training(0.0)
    with_aux = _dead_after_training(SaeConfig().aux_k_coefficient)
    assert without >= 32, "the case must have many dead latents for the check to mean anything"
    assert with_aux <= without // 4, (with_aux, without)


@pytest.mark.parametrize("device_name", CPU_AND_CUDA)
def test_sparse_decode_equals_the_dense_matmul_forward_and_backward(device_name: str) -> None:
    """float64, so the two must agree to rounding (test_sparse_kernels: the trainer's dtypes)."""
    device = device_for(device_name)
    gen = torch.Generator().manual_seed(0)
    batch, d_sae, d_in, k = 32, 200, 24, 7
    w_dec = torch.randn(d_sae, d_in, generator=gen, dtype=torch.float64).to(device)
    pre = torch.randn(batch, d_sae, generator=gen, dtype=torch.float64).to(device)
    grad_out = torch.randn(batch, d_in, generator=gen, dtype=torch.float64).to(device)

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


@pytest.mark.parametrize("device_name", CPU_AND_CUDA)
@pytest.mark.parametrize("architecture", ["topk", "batchtopk"])
def test_sparse_step_equals_the_dense_one_with_auxk(architecture: str, device_name: str) -> None:
    """The sparse path (pre-activations without a graph, gradient only into the selected and
    AuxK's entries; BatchTopK's variable count per sample decoded by offsets) gives the dense
    path's loss, every parameter's gradient and BatchTopK's running threshold."""
    device = device_for(device_name)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 24, generator=gen, dtype=torch.float64).to(device)
    dead = torch.zeros(200, dtype=torch.bool, device=device)
    dead[::3] = True

    def run(sparse: bool) -> list[torch.Tensor]:
        config = SaeConfig(
            architecture=architecture, d_in=24, d_sae=200, k=7, sparse_decoder=sparse, seed=1
        )
        model = build_model(config, torch.device("cpu")).double()
        with torch.no_grad():  # non-zero biases, so their gradient terms count
            model.b_dec.copy_(x.mean(0))
            model.b_enc.normal_(generator=torch.Generator().manual_seed(2))
        model.to(device)
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
