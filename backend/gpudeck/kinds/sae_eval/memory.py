"""Peak device memory per rank of an evaluation, before launch: an honest upper count, not a
trace. Every rank holds the whole SAE (and, with loss recovered, the whole language model) and
scores whole batches, so the figure does not shrink with the world size.

- SAE parameters: W_enc, W_dec, b_enc, b_dec in the checkpoint's dtype.
- A batch of rows (heldout.Score.add): the rows, pre-activations, activations and the firing
  mask [B, d_sae], and the float64 copies the error sums take [B, d_in] (four at most).
- Firing counts and the per-dimension sums (float64), kept between batches.
- With loss recovered: the model's parameters (numel from its safetensors headers, in the
  chosen dtype); a batch's forward (activations/extract.forward_bytes_per_sequence, the same
  rule batch size `auto` uses there); the logits with their float32 copy and cross-entropy's
  log-softmax [B, T, vocab]; the SAE's work on the hook's [B x T, d_in] tensor.
- On CUDA: one cuBLAS workspace (a forward pass only) and the CUDA context and NCCL (the
  stop check is a collective) outside the allocator, the constants kinds/sae/memory.py measured.

The checkpoint and the model are read from the data directory (only their shapes); a source
with no checkpoint yet (an evaluation waiting for its job) counts no SAE and says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gpudeck.core.config import get_settings
from gpudeck.engine.kinds import DeviceType, InputError, MemoryComponent, MemoryEstimate
from gpudeck.engine.map.inputs import ItemsError, resolve_under
from gpudeck.engine.safetensors_header import read_header
from gpudeck.kinds.activations.extract import forward_bytes_per_sequence
from gpudeck.kinds.sae.memory import CUBLAS_WORKSPACE_BYTES, CUDA_CONTEXT_BYTES, NCCL_BYTES
from gpudeck.kinds.sae_eval.checks import read_source
from gpudeck.kinds.sae_eval.config import LossRecovered, SaeEvalConfig

ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
_WIDTH_KEYS = ("hidden_size", "n_embd", "d_model")
_HEADS_KEYS = ("num_attention_heads", "n_head")


@dataclass(frozen=True)
class SaeShape:
    d_in: int
    d_sae: int
    itemsize: int


@dataclass(frozen=True)
class LmShape:
    parameters: int  # numel of every stored tensor (tied weights are stored once)
    itemsize: int
    width: int
    heads: int
    vocab: int
    context_length: int
    batch: int


def sae_components(sae: SaeShape, batch: int) -> list[MemoryComponent]:
    d_in, d_sae, item = sae.d_in, sae.d_sae, sae.itemsize
    rows = [
        ("sae_parameters", (2 * d_in * d_sae + d_in + d_sae) * item, "W_enc, W_dec, b_enc, b_dec"),
        (
            "row_batch",
            batch * (d_in * (item + 4 * 8) + d_sae * (3 * item + 1)),
            f"{batch} rows: input, pre-activations, activations, firing mask, float64 errors",
        ),
        ("score_sums", (d_sae + 2 * d_in) * 8, "firing counts and per-dimension sums (float64)"),
    ]
    return [MemoryComponent(name=n, bytes=b, note=note) for n, b, note in rows]


def lm_components(lm: LmShape, sae: SaeShape | None) -> list[MemoryComponent]:
    tokens = lm.batch * lm.context_length
    forward = lm.batch * forward_bytes_per_sequence(
        lm.width, lm.heads, lm.context_length, lm.itemsize
    )
    hook = (
        0 if sae is None else tokens * (sae.d_in * 2 * sae.itemsize + sae.d_sae * 2 * sae.itemsize)
    )
    rows = [
        ("lm_parameters", lm.parameters * lm.itemsize, f"{lm.parameters:,} model parameters"),
        ("lm_forward", forward, f"{lm.batch} sequences x {lm.context_length} tokens, no graph"),
        (
            "lm_logits",
            tokens * lm.vocab * (lm.itemsize + 3 * 4),
            "logits, float32 copy, log-softmax",
        ),
        ("sae_at_hook", hook, "the SAE's encoding and reconstruction of the hook's tensor"),
    ]
    return [MemoryComponent(name=n, bytes=b, note=note) for n, b, note in rows]


def assemble(
    sae: SaeShape | None,
    batch: int,
    lm: LmShape | None,
    world_size: int,
    device_type: DeviceType,
    missing: str = "",
) -> MemoryEstimate:
    """The estimate from the shapes; `missing` says what could not be counted."""
    parts = sae_components(sae, batch) if sae else []
    parts += lm_components(lm, sae) if lm else []
    on_cuda = device_type == "cuda"
    workspace = CUBLAS_WORKSPACE_BYTES if on_cuda else 0
    reserve = CUDA_CONTEXT_BYTES + NCCL_BYTES if on_cuda else 0
    parts += [
        MemoryComponent(name="cublas_workspace", bytes=workspace, note="one handle: forward only"),
        MemoryComponent(name="framework_reserve", bytes=reserve, note="CUDA context and NCCL"),
    ]
    peak = sum(p.bytes for p in parts) - reserve
    return MemoryEstimate(
        bytes_per_device=peak + reserve,
        peak_step_bytes=peak,
        breakdown=parts,
        method="counted from the shapes of the SAE, the batch and the model (kinds/sae_eval/"
        "memory.py), every term an upper count" + (f"; not counted: {missing}" if missing else ""),
        world_size=world_size,
        per_rank_batch=batch,
        dtype="float32" if sae is None or sae.itemsize == 4 else "bfloat16",
        device_type=device_type,
    )


def estimate_memory(
    config: SaeEvalConfig,
    world_size: int = 1,
    *,
    device_type: DeviceType = "cuda",
    data_dir: Path | None = None,
) -> MemoryEstimate:
    """Peak memory per device of one rank of `config`, read from `data_dir` (the server's)."""
    data_dir = get_settings().data_dir if data_dir is None else data_dir
    spec = config.loss_recovered
    sae = sae_shape(config, data_dir)
    lm = lm_shape(spec, data_dir) if isinstance(spec, LossRecovered) else None
    missing = [
        *(["the SAE (the source has no checkpoint yet)"] if sae is None else []),
        *(["the model (not there yet)"] if isinstance(spec, LossRecovered) and lm is None else []),
    ]
    return assemble(sae, config.batch_size, lm, world_size, device_type, ", ".join(missing))


def sae_shape(config: SaeEvalConfig, data_dir: Path) -> SaeShape | None:
    try:
        trained = read_source(config, data_dir).config
    except InputError:
        return None
    return SaeShape(trained.d_in, trained.d_sae, ITEMSIZE[trained.dtype])


def lm_shape(spec: LossRecovered, data_dir: Path) -> LmShape | None:
    """The model's sizes from its config.json and safetensors headers; None when it is not
    there yet (submit refuses that unless the job waits for another)."""
    try:
        path = resolve_under(data_dir / "models", spec.model)
        config = json.loads((path / "config.json").read_text())
        parameters = sum(_numel(f) for f in sorted(path.glob("*.safetensors")))
    except (ItemsError, OSError, ValueError):
        return None
    cfg = config.get("text_config", config)  # a multimodal model's language part
    width = next((int(cfg[k]) for k in _WIDTH_KEYS if k in cfg), 0)
    heads = next((int(cfg[k]) for k in _HEADS_KEYS if k in cfg), 1)
    vocab = int(cfg.get("vocab_size", 0))
    length = spec.context_length
    return LmShape(parameters, ITEMSIZE[spec.dtype], width, heads, vocab, length, spec.batch_size)


def _numel(path: Path) -> int:
    """Elements of every tensor in a .safetensors file, from its header alone."""
    header, _ = read_header(path)
    return sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
