"""The `script` job kind: the user's own torchrun-ready program, run unchanged by the real
torchrun (`python -m torch.distributed.run`) from an interpreter the admin configured, on the
devices GPUDeck reserved (docs/script-jobs.md).

What the registry loads: the config model and code references; nothing imports torch.
"""

from __future__ import annotations

from gpudeck.engine.kind_api import KIND_API_VERSION
from gpudeck.engine.kinds import Chart, JobKind, Series
from gpudeck.kinds.script.config import ScriptConfig

KIND = JobKind(
    name="script",
    api_version=KIND_API_VERSION,  # built in: always written for the current version
    description="Your own torchrun script (DDP), run unchanged on the chosen devices",
    config_model=ScriptConfig,
    train="gpudeck.kinds.script.command:no_rank_entry",
    command="gpudeck.kinds.script.command:build_command",
    estimate_memory="gpudeck.kinds.script.memory:estimate_memory",
    estimate_fields=("memory_per_device_bytes", "nproc_per_device"),
    check_inputs="gpudeck.kinds.script.checks:check_inputs",
    charts=(Chart("Loss", (Series("loss", "loss"),)),),
    summary_metrics=(Series("loss", "loss"),),
    runs_user_code=True,
)
