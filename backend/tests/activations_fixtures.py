"""A tiny random GPT-2 (and a word-level tokenizer) built on disk, and a reference computed
without GPUDeck: the model's own `output_hidden_states`, batch by batch in input order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

CONTEXT = 16
WORDS = [f"w{i}" for i in range(90)]


def tiny_gpt2(models_dir: Path, *, with_tokenizer: bool = False) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    path = models_dir / "gpt2-tiny"
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=100, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(path)
    if with_tokenizer:
        _tiny_tokenizer().save_pretrained(path)
    return path


def _tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {"<eos>": 0, "<unk>": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>")


def token_ids(num: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 100, size=(num, CONTEXT + 4), dtype=np.int64)


def texts(num: int, seed: int = 2) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 24)))) for _ in range(num)]


def reference(
    model_dir: Path,
    batches: list[tuple[torch.Tensor, torch.Tensor]],
    layer: int,
    positions: str = "all",
) -> torch.Tensor:
    """Block `layer`'s output (hidden_states[layer + 1]) at the chosen positions, [rows, d]."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    rows = []
    with torch.inference_mode():
        for ids, mask in batches:
            padded = {"attention_mask": mask} if not bool(mask.all()) else {}
            hidden = model(input_ids=ids, output_hidden_states=True, **padded)
            acts = hidden.hidden_states[layer + 1]
            if positions == "all":
                rows.append(acts[mask.bool()])
            else:
                rows.append(acts[torch.arange(len(ids)), mask.sum(1) - 1])
    return torch.cat(rows)


def id_batches(ids: np.ndarray, batch: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = []
    for start in range(0, len(ids), batch):
        part = torch.as_tensor(ids[start : start + batch, :CONTEXT])
        out.append((part, torch.ones_like(part)))
    return out


def text_batches(model_dir: Path, lines: list[str], batch: int) -> list[Any]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tok.padding_side = "right"
    tok.pad_token = tok.pad_token or tok.eos_token
    out = []
    for start in range(0, len(lines), batch):
        enc = tok(
            lines[start : start + batch],
            truncation=True,
            max_length=CONTEXT,
            padding=True,
            return_tensors="pt",
        )
        out.append((enc["input_ids"], enc["attention_mask"]))
    return out


def assert_same_rows(got: torch.Tensor, expected: torch.Tensor) -> None:
    """`got` holds `expected`'s rows in the same order. Not bit for bit: a rank process and this
    test compute the same matmuls, but MKL may take different code paths per process (buffer
    alignment, thread count), which moves the last bits. Rows differ from one another by ~1e-2, so
    1e-5 still catches any missing, repeated or reordered row."""
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
