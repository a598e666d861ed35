"""DDP and resume equivalence: world size and restarts must not change the training run."""

from __future__ import annotations

from pathlib import Path

import ddp_steps
import numpy as np
import pytest
import torch
from cuda_cases import device_for
from rank_processes import run_in_processes
from rankrunner import make_spec, read_events, run_ranks, tiny_config

from gpudeck.engine.checkpoint import latest_checkpoint
from gpudeck.kinds.sae.checkpoint import load as load_checkpoint


def _final_weights(tmp: Path, config: dict, world: int, **kw: object) -> dict[str, torch.Tensor]:
    spec = make_spec(tmp, config, **kw)  # type: ignore[arg-type]
    assert run_ranks(spec, world) == [0] * world
    path = latest_checkpoint(spec.checkpoint_dir)
    assert path is not None and path.name == f"step_{config['steps']}"
    return load_checkpoint(path).weights


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_two_ranks_half_batch_match_one_rank_full_batch(tmp_path: Path) -> None:
    config = tiny_config()
    one = _final_weights(tmp_path / "one", config, 1)
    two = _final_weights(tmp_path / "two", config, 2)
    assert _max_diff(one, two) <= 1e-5


def test_ddp_equivalence_on_shuffled_file_data(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "datasets").mkdir(parents=True)
    acts = np.random.default_rng(0).standard_normal((1000, 16)).astype(np.float32)
    np.save(data_dir / "datasets" / "acts.npy", np.maximum(acts, 0))
    # 1000 samples / 64 per batch: 15 batches per epoch, so 40 steps cross two epoch boundaries
    config = tiny_config(steps=40, dataset={"type": "file", "path": "acts.npy"})
    one = _final_weights(tmp_path / "one", config, 1, data_dir=data_dir, job_id=1)
    two = _final_weights(tmp_path / "two", config, 2, data_dir=data_dir, job_id=2)
    assert _max_diff(one, two) <= 1e-5


def test_resume_continues_the_same_run(tmp_path: Path) -> None:
    config = tiny_config(steps=100)
    straight = _final_weights(tmp_path / "straight", config, 1)
    first = make_spec(tmp_path / "first", tiny_config(steps=50))
    assert run_ranks(first, 1) == [0]
    resume_from = latest_checkpoint(first.checkpoint_dir)
    assert resume_from is not None and resume_from.name == "step_50"
    resumed = _final_weights(tmp_path / "resumed", config, 1, resume_from=str(resume_from))
    assert _max_diff(straight, resumed) <= 1e-6


@pytest.mark.parametrize(
    "overrides",
    [
        {"architecture": "jumprelu", "l0_coefficient": 0.05, "k": 4},
        {"architecture": "batchtopk", "k": 4, "dead_min_frequency": 0.02},
    ],
    ids=["jumprelu", "batchtopk"],
)
def test_resume_at_the_end_of_the_topk_warm_up_continues_the_same_run(
    tmp_path: Path, overrides: dict[str, object]
) -> None:
    """The checkpoint at step 50 is the warm-up's last: the resumed run must make the switch
    (JumpReLU's thresholds from the saved running threshold) and restore the firing
    frequencies of the dead rule, as the straight run has them."""
    config = tiny_config(steps=100, topk_warm_up_steps=50, **overrides)
    straight = _final_weights(tmp_path / "straight", config, 1)
    first = make_spec(tmp_path / "first", {**config, "steps": 50})
    assert run_ranks(first, 1) == [0]
    resume_from = latest_checkpoint(first.checkpoint_dir)
    assert resume_from is not None and resume_from.name == "step_50"
    resumed = _final_weights(tmp_path / "resumed", config, 1, resume_from=str(resume_from))
    assert _max_diff(straight, resumed) <= 1e-6


@pytest.mark.parametrize(
    "backend",
    [pytest.param("gloo", id="gloo"), pytest.param("nccl", id="nccl", marks=pytest.mark.gpu)],
)
def test_ddp_steps_match_one_process_on_the_full_batch(tmp_path: Path, backend: str) -> None:
    """The trainer's model under DDP (gloo: two CPU ranks; nccl: one rank per GPU), each rank
    on its share of every batch, ends where one process without DDP ends on whole batches."""
    device = device_for("cuda" if backend == "nccl" else "cpu")
    world = torch.cuda.device_count() if backend == "nccl" else 2
    run_in_processes(ddp_steps.rank_main, backend, world, tmp_path)
    for architecture in ddp_steps.ARCHITECTURES:
        want = ddp_steps.train(ddp_steps.config(architecture), device)
        for rank in range(world):
            got = torch.load(tmp_path / f"{architecture}-{rank}.pt")
            assert _max_diff(got, want) <= 1e-5, (architecture, rank)


@pytest.mark.parametrize("architecture", ["topk", "batchtopk"])
def test_two_ranks_keep_one_ranks_dead_latents_and_held_out_figures(
    tmp_path: Path, architecture: str
) -> None:
    """AuxK's dead set comes from one collective a step (metrics.DeadLatents), the held-out
    figures from each rank's share of the rows summed (heldout.evaluate): two ranks on half
    batches keep the dead latents, weights and figures of one rank on whole batches."""
    config = tiny_config(
        architecture=architecture,
        k=2,
        d_sae=256,
        steps=40,
        metrics_interval=10,
        dead_window_steps=5,
        dead_min_frequency=0.02,
        topk_warm_up_steps=0,
    )
    runs = {}
    for world in (1, 2):
        spec = make_spec(tmp_path / str(world), config, job_id=world)
        assert run_ranks(spec, world) == [0] * world
        path = latest_checkpoint(spec.checkpoint_dir)
        assert path is not None and path.name == "step_40"
        runs[world] = (load_checkpoint(path), read_events(spec, "metrics"))
    (one, one_reports), (two, two_reports) = runs[1], runs[2]
    assert any(r["data"]["metrics"]["auxk_loss"] > 0 for r in one_reports)  # AuxK took part
    assert _max_diff(one.weights, two.weights) <= 1e-5
    for name in ("dead.steps_since_fired", "dead.frequency"):
        assert torch.equal(one.state_tensors[name], two.state_tensors[name]), name
    for figure in ("heldout_dead_pct", "heldout_l0", "heldout_explained_variance"):
        want = one_reports[-1]["data"]["metrics"][figure]
        assert two_reports[-1]["data"]["metrics"][figure] == pytest.approx(want, rel=1e-5)
