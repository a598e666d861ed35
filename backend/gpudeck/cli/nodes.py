"""Several machines, one pool (docs/operations.md, "Several machines"):

- `gpudeck nodes add NAME` (an admin, on a machine with the database URL) issues the token a
  node joins with; `gpudeck nodes list` shows each node, its address and whether it is online;
  `gpudeck nodes sharing NAME --on [--across-users]` lets jobs share its devices by memory.
- `gpudeck node` runs this machine's worker and sampler against the shared Postgres and Redis,
  once its token admits it, and restarts either if it dies.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Annotated

import typer

from gpudeck.cli.settings import err_console, load_service_settings
from gpudeck.cli.stopping import stop_on_signals

nodes_app = typer.Typer(no_args_is_help=True, help="Nodes of the pool (admins).")
log = logging.getLogger("gpudeck.node")
TOKEN_ENV = "GPUDECK_NODE_TOKEN"
NODE_PARTS = ("sampler", "worker")


@nodes_app.command("add")
def add_node(name: Annotated[str, typer.Argument(help="the node's GPUDECK_NODE_NAME")]) -> None:
    """Issue the token node NAME joins with (shown once; a new one replaces the old)."""
    from gpudeck.cli.users_db import server_session
    from gpudeck.services.cluster.nodes import issue_token

    with server_session() as session:
        secret = issue_token(session, name)
    typer.echo(f"node {name} joins with {TOKEN_ENV}={secret}")


@nodes_app.command("list")
def list_nodes() -> None:
    """Each node: its address, devices, and whether its sampler reports (online)."""
    from gpudeck.cli.users_db import server_session
    from gpudeck.services.cluster.inventory import list_nodes as rows

    with server_session() as session:
        for row in rows(session):
            state = "online" if row.online else "offline"
            address = row.address or "-"
            typer.echo(f"{row.name}\t{address}\t{row.device_count} devices\t{state}")


@nodes_app.command("sharing")
def node_sharing(
    name: Annotated[str, typer.Argument(help="the node")],
    allow: Annotated[
        bool | None, typer.Option("--on/--off", help="let jobs share its devices by memory")
    ] = None,
    across_users: Annotated[
        bool | None,
        typer.Option("--across-users/--same-user", help="may different users share a device"),
    ] = None,
) -> None:
    """Show or set whether jobs may share node NAME's devices by memory (docs/sharing.md)."""
    from gpudeck.cli.users_db import server_session
    from gpudeck.services.cluster.node_sharing import set_sharing

    with server_session() as session:  # an unknown node: one line naming it, exit 1
        policy = set_sharing(session, name, allow=allow, across_users=across_users)
    typer.echo(policy.words())


def _admitted(name: str) -> bool:
    from gpudeck.cli.users_db import server_session
    from gpudeck.services.cluster.nodes import token_admits

    secret = os.environ.get(TOKEN_ENV, "")
    with server_session() as session:
        return bool(secret) and token_admits(session, name, secret)


def node() -> None:
    """Join this machine to the pool: its worker and sampler, restarted if they die."""
    from gpudeck.cli.parts import gpudeck_part
    from gpudeck.cli.supervisor import TICK_S, Supervised, reap_orphans, stop_parts
    from gpudeck.core.linux import become_subreaper

    settings = load_service_settings("node")
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if not _admitted(settings.node_name):
        err_console.print(
            f"[red]{TOKEN_ENV}[/red]: no valid token for node {settings.node_name}; "
            f"an admin issues one with `gpudeck nodes add {settings.node_name}`"
        )
        raise typer.Exit(2)
    become_subreaper()  # a dead worker's forkserver and ranks are reaped here
    stop = stop_on_signals()
    parts = [Supervised(gpudeck_part(name, dict(os.environ))) for name in NODE_PARTS]
    for part in parts:
        part.start(time.monotonic())
    log.info("node %s joined at %s", settings.node_name, settings.node_address)
    try:
        while not stop.wait(TICK_S):
            for part in parts:
                part.check(time.monotonic())
            reap_orphans(parts)
    finally:
        stop_parts([p.part for p in parts])


def register(app: typer.Typer) -> None:
    app.add_typer(nodes_app, name="nodes")
    app.command()(node)
