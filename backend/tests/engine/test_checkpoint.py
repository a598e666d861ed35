"""Checkpoints: files named by the kind (the engine knows none), the `sae` kind's layout
(SAELens-loadable), atomicity under SIGKILL, retention, completeness by the marker."""

from __future__ import annotations

import multiprocessing as mp
import random
import time
from pathlib import Path

import pytest
import torch
from rankrunner import make_spec, read_events, run_ranks, tiny_config, write_checkpoints_forever
from saelens_check import SaeLens

from gpudeck.engine import checkpoint, checkpoint_dir
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.config import SaeConfig

REPO_ROOT = Path(__file__).resolve().parents[3]

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
    ckpt = sae_checkpoint.load(tmp_path / "data/checkpoints/1/step_4")
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


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sae_lens_loads_the_checkpoint_unchanged(
    tmp_path: Path, dtype: str, sae_lens: SaeLens
) -> None:
    """The real SAELens (6.x) loads our checkpoint directory as-is and computes the same SAE."""
    spec = make_spec(tmp_path, tiny_config(steps=2, dtype=dtype))
    assert run_ranks(spec, 1) == [0]
    path = checkpoint.latest_checkpoint(spec.checkpoint_dir)
    assert path is not None
    result = sae_lens.check("load", path)
    assert result.ok, result.error[-3000:]
    assert "loaded StandardSAE 16 64" in result.output


def _tensors(step: int) -> dict[str, torch.Tensor]:
    return {"w": torch.full((256, 256), float(step))}  # the same as write_checkpoints_forever


def _write(root: Path, step: int, keep: int = 3) -> Path:
    return checkpoint.write_checkpoint(
        root,
        step,
        tensor_files={"w.safetensors": _tensors(step)},
        json_files={"step.json": {"step": step}},
        keep=keep,
    )


def test_retention_keeps_the_newest_complete(tmp_path: Path) -> None:
    (tmp_path / ".tmp-step_99-1").mkdir(parents=True)  # a dead writer's leftovers
    (tmp_path / "step_98").mkdir()  # incomplete: no files
    for step in range(1, 6):
        _write(tmp_path, step, keep=2)
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
        ckpt = checkpoint.open_checkpoint(latest)
        assert ckpt.read_json("step.json")["step"] == ckpt.step
        assert torch.equal(ckpt.read_tensors("w.safetensors")["w"], _tensors(ckpt.step)["w"])
    assert checkpoint.latest_checkpoint(tmp_path) is not None
    assert 1 <= len(checkpoint.list_checkpoints(tmp_path)) <= 3


def test_latest_of_missing_dir_is_none(tmp_path: Path) -> None:
    assert checkpoint.latest_checkpoint(tmp_path / "nope") is None


def test_a_kind_names_its_own_files_and_the_marker_makes_them_complete(tmp_path: Path) -> None:
    """Whatever files a kind passes are written, and nothing else but the marker: the engine
    has no file list of its own, and an unmarked step directory is not a checkpoint."""
    path = checkpoint.write_checkpoint(
        tmp_path,
        7,
        tensor_files={"model.safetensors": {"weight": torch.ones(3)}, "opt.safetensors": {}},
        json_files={"progress.json": {"step": 7, "epoch": 1}},
        keep=3,
    )
    names = {p.name for p in path.iterdir()}
    assert names == {"model.safetensors", "opt.safetensors", "progress.json", ".gpudeck-complete"}
    assert checkpoint_dir.is_complete(path)
    ckpt = checkpoint.open_checkpoint(path)
    assert ckpt.step == 7 and ckpt.read_json("progress.json") == {"step": 7, "epoch": 1}
    assert torch.equal(ckpt.read_tensors("model.safetensors")["weight"], torch.ones(3))
    unmarked = tmp_path / "step_9"  # all the files, but not renamed into place by a writer
    unmarked.mkdir()
    for name in ("model.safetensors", "opt.safetensors", "progress.json"):
        (unmarked / name).write_bytes((path / name).read_bytes())
    assert checkpoint.latest_checkpoint(tmp_path) == path


@pytest.mark.parametrize("name", ["", ".hidden", ".gpudeck-complete", "../up", "a/b", "a\\b"])
def test_a_file_name_that_is_not_plain_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="plain name"):
        checkpoint.write_checkpoint(tmp_path, 1, tensor_files={name: {}}, keep=1)
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_names_used_twice_or_none_at_all_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="repeat"):
        checkpoint.write_checkpoint(
            tmp_path, 1, tensor_files={"a.json": {}}, json_files={"a.json": {}}, keep=1
        )
    with pytest.raises(ValueError, match="at least one"):
        checkpoint.write_checkpoint(tmp_path, 1, tensor_files={}, keep=1)


ENGINE = Path(checkpoint.__file__).parent


# Kind API version 1's shims: that version's call fixed the file names of the first kind, and
# writing them is what keeps a kind of that version running (it goes with version 3).
VERSION_1_SHIMS = ENGINE / "kind_api_v1.py"


def test_the_engine_names_no_kind() -> None:
    """The engine knows no kind: no file of it says `sae` (its checkpoint files, its
    arguments, its examples); a kind's names live in the kind's folder."""
    named = [
        f"{path.relative_to(ENGINE)}:{number}"
        for path in sorted(ENGINE.rglob("*.py"))
        if path != VERSION_1_SHIMS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "sae" in line.lower()
    ]
    assert named == []
