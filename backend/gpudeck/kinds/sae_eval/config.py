"""The `sae_eval` kind's configuration: which SAE checkpoint, scored on which rows, and
optionally on which language model (loss recovered)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.kinds.activations.config import HookIo, HookPath, ModelDir, ModelDtype, TokenInput
from gpudeck.kinds.sae.config import FileDataset


class HeldoutRows(BaseModel):
    """The rows the SAE job kept out of training: for synthetic data the samples after its
    num_samples, for a file its last rows."""

    # The docstring is the form's hint while this variant is chosen. The rows: kinds/sae/heldout.py.

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["heldout"] = "heldout"


class EvalFile(FileDataset):
    """Activation vectors [N, d_in] in a file under <data_dir>/datasets, every row scored."""

    max_rows: int | None = Field(
        default=None,
        title="rows",
        ge=1,
        le=10**10,
        description="score the file's first n rows only; empty: every row",
    )


EvalDataset = Annotated[HeldoutRows | EvalFile, Field(discriminator="type")]


class NoLossRecovered(BaseModel):
    """No language model: the SAE is scored on activation rows only."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["off"] = "off"


class LossRecovered(BaseModel):
    """The language model run three ways: clean, with the SAE spliced in at the hook, and with
    the hook zeroed (SAEBench's loss recovered)."""

    # The docstring is the form's hint while this variant is chosen. The figure: the model's
    # next-token cross-entropy on the token sequences each way, (L_zero - L_sae) / (L_zero -
    # L_clean). The fields are the activations job's the SAE was trained on (its output's
    # cfg.json), which the evaluation follow-up fills in.

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["lm"] = "lm"
    model: ModelDir = Field(
        title="model",
        description=(
            "the model the SAE's activations came from: a save_pretrained directory under"
            " <data_dir>/models (never downloaded)"
        ),
    )
    input: TokenInput = Field(
        title="token sequences",
        description=(
            "what the model reads, under <data_dir>/datasets: token ids [N, T]"
            " (.npy/.safetensors) or .jsonl text, usually the activations job's input"
        ),
    )
    tensor_name: str | None = Field(
        default=None,
        title="tensor name",
        max_length=128,
        description="tensor of token ids to read from a .safetensors file",
    )
    text_field: str = Field(
        default="text",
        title="text field",
        min_length=1,
        max_length=128,
        description="a .jsonl record's text (tokenized with the model directory's tokenizer)",
    )
    hook: HookPath = Field(
        title="hook point",
        description=(
            "the module the SAE's activations were taken from (the activations job's hook, e.g."
            " transformer.h.6); its width must be the SAE's d_in"
        ),
    )
    hook_io: HookIo = Field(
        default="output",
        title="hook input/output",
        description="the module's output or its first input: what the SAE was trained on",
    )
    context_length: int = Field(
        default=128,
        title="context length",
        ge=2,
        le=1_048_576,
        description="tokens per sequence (longer ones are cut)",
    )
    max_sequences: int = Field(
        default=256,
        title="sequences",
        ge=1,
        le=1_000_000,
        description="score the input's first n sequences (fewer if it holds fewer)",
    )
    batch_size: int = Field(
        default=8,
        title="sequences per batch",
        ge=1,
        le=4096,
        description="sequences run through the model at once on each rank",
    )
    dtype: ModelDtype = Field(default="float32", title="model dtype")


LossRecoveredSpec = Annotated[NoLossRecovered | LossRecovered, Field(discriminator="type")]


class SaeEvalConfig(BaseModel):
    """One checkpoint of an `sae` job, scored on rows it was not trained on."""

    model_config = ConfigDict(extra="forbid", strict=True)

    source_job: int = Field(
        title="SAE job",
        ge=1,
        le=2**63 - 1,
        description="the sae job whose checkpoint is scored (running or ended)",
    )
    step: int | None = Field(
        default=None,
        title="checkpoint step",
        ge=0,
        le=2**62,
        description="the checkpoint's step; empty: the job's newest complete checkpoint",
    )
    dataset: EvalDataset = Field(
        default_factory=HeldoutRows,
        title="rows",
        description=(
            "heldout: the rows the SAE job kept out of training; file: a file of activation"
            " vectors under <data_dir>/datasets"
        ),
    )
    batch_size: int = Field(
        default=4096,
        title="batch size",
        ge=1,
        le=1_048_576,
        description="rows encoded at once on each rank",
    )
    loss_recovered: LossRecoveredSpec = Field(
        default_factory=NoLossRecovered,
        title="loss recovered",
        description=(
            "lm: also run the language model the SAE's activations came from three ways (clean,"
            " the SAE's reconstruction spliced in at the hook, the hook zeroed) and report loss"
            " recovered, SAEBench's (zeroed - SAE) / (zeroed - clean) of the next-token loss: 1"
            " when the SAE loses nothing the model uses, 0 when it is as bad as zeroing; off:"
            " skip it"
        ),
    )
