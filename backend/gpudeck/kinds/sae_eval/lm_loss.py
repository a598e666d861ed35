"""Loss recovered (SAEBench's core metric, SAELens's `get_recons_loss`): the language model's
next-token cross-entropy on the same sequences three ways, clean, with the hook point's tensor
replaced by the SAE's reconstruction (raw-activation space, as run.load_sae loads it), and with
it zeroed; then (L_zero - L_sae) / (L_zero - L_clean): 1 when the reconstruction loses nothing
the model uses, 0 when it is as bad as deleting the activation.

Every position is replaced (the first token's too, as SAELens does by default); the loss is
the mean over every predicted token that is not padding. The sums are kept in float64 so that
ranks can add them up and the mean does not depend on how batches were cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from gpudeck.engine.map.inputs import Items, ItemsError, open_items, resolve_under
from gpudeck.kinds.activations.extract import encode, load_model
from gpudeck.kinds.activations.hooks import replacing
from gpudeck.kinds.sae.model import Sae
from gpudeck.kinds.sae_eval.config import LossRecovered

# The three runs, in the order of the sums: [clean, sae, zero, tokens].
RUNS = ("clean", "sae", "zero")
# Below this gap between the zero-ablated and the clean loss the ratio means nothing (the hook
# point does not matter to the model on these sequences): it is not reported.
MIN_GAP = 1e-6


@dataclass(frozen=True)
class LanguageModel:
    """The model, its tokenizer (None for token-id inputs), the hook module and the sequences."""

    model: Any
    tokenizer: Any
    module: torch.nn.Module
    items: Items
    count: int
    vocab_size: int


def open_model(spec: LossRecovered, data_dir: Path, device: torch.device) -> LanguageModel:
    datasets = data_dir / "datasets"
    items = open_items(resolve_under(datasets, spec.input), spec.tensor_name)
    count = min(spec.max_sequences, len(items))
    if count == 0:
        raise ItemsError(f"{spec.input} holds no sequences")
    model, tokenizer = load_model(
        resolve_under(data_dir / "models", spec.model), spec.dtype, device
    )
    vocab = int(model.get_output_embeddings().weight.shape[0])
    return LanguageModel(model, tokenizer, model.get_submodule(spec.hook), items, count, vocab)


def _reconstruct(sae: Sae, hook: str) -> Any:
    def change(t: torch.Tensor) -> torch.Tensor:
        if t.shape[-1] != sae.d_in:
            raise ValueError(f"hook {hook} gives width {t.shape[-1]}, the SAE's d_in is {sae.d_in}")
        # [batch, tokens, d_in] as rows [batch * tokens, d_in]: the SAE encodes rows, as in
        # training (TopK's encode scatters into a [rows, d_sae] tensor)
        x = t.reshape(-1, sae.d_in).to(sae.W_enc.dtype)
        return sae.decode(sae.encode(x)).reshape(t.shape).to(t.dtype)

    return change


def _summed_loss(lm: LanguageModel, inputs: dict[str, torch.Tensor], valid: torch.Tensor) -> float:
    logits = lm.model(**inputs).logits[:, :-1]
    labels = inputs["input_ids"][:, 1:]
    losses = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none")
    return float(losses[valid.flatten()].double().sum())


@torch.inference_mode()
def batch_sums(
    lm: LanguageModel, sae: Sae, spec: LossRecovered, start: int, stop: int
) -> torch.Tensor:
    """float64[4]: the summed token losses of sequences [start, stop) clean, with the SAE's
    reconstruction and zeroed, and the number of tokens predicted."""
    ids, mask = encode(lm.items.get(start, stop), lm.tokenizer, spec)
    if int(ids.max()) >= lm.vocab_size or int(ids.min()) < 0:
        vocab = f"[0, {lm.vocab_size})"
        raise ItemsError(f"{spec.input}: token ids outside the model's vocabulary {vocab}")
    device = next(lm.model.parameters()).device
    inputs = {"input_ids": ids.to(device)}
    if not bool(mask.all()):  # right padding: the targets that are padding are not scored
        inputs["attention_mask"] = mask.to(device)
    valid = mask[:, 1:].bool().to(device)
    clean = _summed_loss(lm, inputs, valid)
    with replacing(lm.module, spec.hook_io, _reconstruct(sae, spec.hook)):
        spliced = _summed_loss(lm, inputs, valid)
    with replacing(lm.module, spec.hook_io, torch.zeros_like):
        zeroed = _summed_loss(lm, inputs, valid)
    return torch.tensor([clean, spliced, zeroed, float(valid.sum())], dtype=torch.float64)


def figures(sums: torch.Tensor) -> dict[str, float]:
    """The mean losses, and loss recovered where the zeroed and clean losses differ."""
    tokens = max(float(sums[3]), 1.0)
    clean, spliced, zeroed = (float(s) / tokens for s in sums[:3])
    found = {"lm_loss_clean": clean, "lm_loss_sae": spliced, "lm_loss_zero": zeroed,
             "lm_tokens": float(sums[3])}  # fmt: skip
    if zeroed - clean > MIN_GAP:
        found["loss_recovered"] = (zeroed - spliced) / (zeroed - clean)
    return found


def left_out(found: dict[str, float], hook: str) -> str | None:
    """Why `figures` left loss recovered out (for the job's log: the page shows a dash), or
    None when it is there."""
    if "loss_recovered" in found:
        return None
    clean, zeroed = found["lm_loss_clean"], found["lm_loss_zero"]
    return (
        f"loss recovered left out: zeroing {hook} did not raise the model's loss (clean"
        f" {clean:.4f}, zeroed {zeroed:.4f} nats per token), so there is no loss for the SAE to"
        " recover; the model ignores that hook point on these sequences (an untrained model,"
        " for one)"
    )
