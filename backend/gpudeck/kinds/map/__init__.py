"""The `map` job kind: the user's own function (`module:function` from a code root) called on
batches of a dataset on every chosen device, through the map engine (strategies, ordered
output, resume by chunk). It runs user code, so only users holding `run_code` submit it.

What the registry loads: the config model and code references; nothing imports torch.
"""

from __future__ import annotations

from gpudeck.engine.kind_api import KIND_API_VERSION
from gpudeck.engine.kinds import Chart, JobKind, Series
from gpudeck.kinds.map.config import MapFunctionConfig

KIND = JobKind(
    name="map",
    api_version=KIND_API_VERSION,  # built in: always written for the current version
    description="Your own function (module:function) mapped over a dataset on the chosen devices",
    config_model=MapFunctionConfig,
    train="gpudeck.kinds.map.run:train",
    check_inputs="gpudeck.kinds.map.checks:check_inputs",
    charts=(Chart("Throughput", (Series("items_per_s", "items/s"),)),),
    summary_metrics=(Series("items", "items"), Series("items_per_s", "items/s")),
    resumes_from="output",
    runs_user_code=True,
)
