"""Requests and responses of the memory estimate routes (no torch import here)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DeviceType = Literal["cuda", "cpu"]


class EstimateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    kind: str = Field(min_length=1, max_length=64, examples=["sae"])
    config: dict[str, Any] = Field(default_factory=dict)
    world_size: int = Field(default=1, ge=1, le=64)
    device_type: DeviceType = Field(
        default="cuda",
        description="cuda: the estimate every job is placed by, on simulated devices too; cpu: "
        "the step's memory on a CPU, without the CUDA allocator's rounding and workspace",
    )


class MaxBatchRequest(EstimateRequest):
    bytes_free_per_device: int = Field(ge=0, description="the smallest free memory of the set")
    safety_margin_bytes: int = Field(default=512 * 1024**2, ge=0)


class MemoryComponentPublic(BaseModel):
    name: str
    bytes: int
    note: str


class ExpectationPublic(BaseModel):
    label: str
    value: str
    note: str
    warning: bool = Field(
        default=False,
        description="the config is known to train badly; the note says what to change",
    )


class EstimatePublic(BaseModel):
    bytes_per_device: int = Field(description="peak incl. framework reserve: compare with free")
    peak_step_bytes: int = Field(description="what torch.cuda.max_memory_allocated should show")
    breakdown: list[MemoryComponentPublic]
    method: str
    world_size: int
    per_rank_batch: int
    dtype: str
    device_type: DeviceType
    expectations: list[ExpectationPublic] = Field(
        default_factory=list,
        description="figures the job should show, read from its config (an SAE's L0)",
    )


class MaxBatchPublic(BaseModel):
    batch_size: int = Field(description="global batch, a multiple of world_size; 0: none fits")
    per_rank_batch: int
    estimate: EstimatePublic | None = Field(description="the estimate at that batch size")
