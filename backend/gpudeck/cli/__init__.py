"""The `gpudeck` command line. Server commands start parts of GPUDeck; client commands talk to a
running API over HTTP (readable tables by default, `--json` for scripts)."""

from __future__ import annotations

import typer

from gpudeck.cli import (
    client,
    clusters,
    compare,
    estimate,
    help_text,
    job_commands,
    kinds,
    labels,
    nodes,
    queue,
    sampler,
    scheduler,
    server,
    sweeps,
    users,
    worker,
)

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
server.register(app)
client.register(app)
queue.register(app)
job_commands.register(app)
worker.register(app)
nodes.register(app)
sampler.register(app)
scheduler.register(app)
users.register(app)
estimate.register(app)
kinds.register(app)
sweeps.register(app)
labels.register(app)
compare.register(app)
clusters.register(app)
help_text.unwrap_help(app)  # last: after every command is registered
