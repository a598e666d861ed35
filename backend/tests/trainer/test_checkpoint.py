"""Checkpoint layout (SAELens-loadable), atomicity under SIGKILL, retention."""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import time
from pathlib import Path

import pytest
import torch
from rankrunner import make_spec, read_events, run_ranks, tiny_config, write_checkpoints_forever

from gpudeck.trainer import checkpoint
from gpudeck.trainer.sae_config import SaeConfig

# What sae_lens.SAE.load_from_disk (SAELens 6.x) needs: StandardSAEConfig's fields, the
# architecture to pick the class, a version >= 6 so no pre-6.0 defaulting applies, and the
# four parameters of StandardSAE under these names, loaded with strict load_state_dict.
SAE_LENS_REQUIRED = {
    "d_in",
    "d_sae",
    "dtype",
    "device",
    "architecture",
    "apply_b_dec_to_input",
    "normalize_activations",
    "sae_lens_version",
}
SAE_LENS_METADATA = {"model_name", "hook_name", "context_size", "dataset_path"}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_checkpoint_contents_match_the_config(tmp_path: Path, dtype: str) -> None:
    config = tiny_config(steps=4, dtype=dtype, checkpoint_interval=2)
    spec = make_spec(tmp_path, config)
    assert run_ranks(spec, 2) == [0, 0]
    ckpt = checkpoint.load_checkpoint(tmp_path / "data/checkpoints/1/step_4")
    d_in, d_sae, torch_dtype = 16, 64, getattr(torch, dtype)
    shapes = {"W_enc": (d_in, d_sae), "b_enc": (d_sae,), "W_dec": (d_sae, d_in), "b_dec": (d_in,)}
    assert {k: tuple(v.shape) for k, v in ckpt.weights.items()} == shapes
    assert all(v.dtype == torch_dtype and v.is_contiguous() for v in ckpt.weights.values())
    cfg = ckpt.cfg
    assert cfg.keys() >= SAE_LENS_REQUIRED
    assert cfg["metadata"].keys() >= SAE_LENS_METADATA | {"sae_lens_version"}
    assert (cfg["d_in"], cfg["d_sae"], cfg["dtype"], cfg["device"]) == (d_in, d_sae, dtype, "cpu")
    assert cfg["architecture"] == "standard" and cfg["apply_b_dec_to_input"] is True
    assert cfg["normalize_activations"] == "none" and int(cfg["sae_lens_version"][0]) >= 6
    assert SaeConfig.model_validate(ckpt.state["config"]) == SaeConfig.model_validate(config)
    assert (ckpt.state["step"], ckpt.state["world_size"]) == (4, 2)
    assert ckpt.state["position"] == 4 * config["batch_size"]
    assert {
        "optim.W_enc.exp_avg",
        "optim.W_enc.exp_avg_sq",
        "optim.b_dec.step",
        "step",
        "rng.torch_cpu",
    } <= ckpt.state_tensors.keys()
    steps = [e["data"]["step"] for e in read_events(spec, "checkpoint")]
    assert steps == [2, 4]


def test_sae_lens_loads_the_checkpoint(tmp_path: Path) -> None:
    sae_lens = pytest.importorskip("sae_lens")
    spec = make_spec(tmp_path, tiny_config(steps=2))
    assert run_ranks(spec, 1) == [0]
    path = checkpoint.latest_checkpoint(spec.checkpoint_dir)
    sae = sae_lens.SAE.load_from_disk(str(path))
    weights = checkpoint.load_checkpoint(path).weights  # type: ignore[arg-type]
    assert torch.equal(sae.W_dec.detach(), weights["W_dec"])


def _tensors(step: int) -> dict[str, torch.Tensor]:
    return {"w": torch.full((256, 256), float(step))}  # the same as write_checkpoints_forever


def test_retention_keeps_the_newest_complete(tmp_path: Path) -> None:
    (tmp_path / ".tmp-step_99-1").mkdir(parents=True)  # a dead writer's leftovers
    (tmp_path / "step_98").mkdir()  # incomplete: no files
    for step in range(1, 6):
        checkpoint.write_checkpoint(
            tmp_path,
            step,
            weights=_tensors(step),
            cfg={},
            state_tensors={},
            state={"step": step},
            keep=2,
        )
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["step_4", "step_5"]
    assert checkpoint.latest_checkpoint(tmp_path) == tmp_path / "step_5"
    assert not list(tmp_path.glob(".tmp-*"))


def test_sigkill_mid_write_never_leaves_a_broken_latest(tmp_path: Path) -> None:
    ctx = mp.get_context("forkserver")
    rng = random.Random(0)
    for _ in range(24):
        proc = ctx.Process(target=write_checkpoints_forever, args=(str(tmp_path),))
        proc.start()
        time.sleep(rng.uniform(0.05, 0.4))
        proc.kill()
        proc.join()
        latest = checkpoint.latest_checkpoint(tmp_path)
        if latest is None:
            continue
        ckpt = checkpoint.load_checkpoint(latest)
        assert ckpt.cfg["step"] == ckpt.step
        assert torch.equal(ckpt.weights["w"], _tensors(ckpt.step)["w"])
    assert checkpoint.latest_checkpoint(tmp_path) is not None
    assert 1 <= len(checkpoint.list_checkpoints(tmp_path)) <= 3


def test_latest_of_missing_dir_is_none(tmp_path: Path) -> None:
    assert checkpoint.latest_checkpoint(tmp_path / "nope") is None
    assert json.loads(json.dumps(checkpoint.CHECKPOINT_FILES))
