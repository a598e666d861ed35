"""The `sae_eval` kind's configuration: which SAE checkpoint, scored on which rows."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpudeck.kinds.sae.config import FileDataset


class HeldoutRows(BaseModel):
    """The rows the source job kept out of training (kinds/sae/heldout.py): for synthetic
    data the samples after its `num_samples`, for a file its last rows."""

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
