"""`gpudeck clusters add slurm / list / remove`: the real command against a real API and the
real test cluster, agreeing with what the API answers."""

from __future__ import annotations

import json
from pathlib import Path

from cli_harness import Cli
from harness import create_token, live_server
from slurm.cluster import GPU_TYPE, GPUS_PER_NODE, NODES, PARTITION, SlurmCluster
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings


def test_add_list_and_remove_a_cluster_from_the_cli(
    settings: Settings,
    admin_token: str,
    session_factory: sessionmaker[Session],
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    user_token = create_token(session_factory, "user", name="bob")
    add = [
        "clusters", "add", "slurm", "--name", "lab", "--partition", PARTITION,
        "--shared-dir", str(slurm_cluster.root / "shared"), "--account", "ml", "--qos", "normal",
        "--slurm-conf", str(slurm_cluster.conf),
    ]  # fmt: skip
    with live_server(settings) as url:
        cli = Cli(url, admin_token, tmp_path)
        assert cli(*add, token=user_token).returncode == 1  # admins only
        added = cli(*add)
        assert added.returncode == 0, added.stderr
        assert f"cluster lab added: partitions {PARTITION}" in added.stdout

        unknown = cli(*add[:4], "lab2", "--partition", "nosuch", *add[7:])
        assert unknown.returncode == 1 and "partitions" in unknown.stderr, unknown.stderr
        assert "nosuch" in unknown.stderr

        listed = json.loads(cli("clusters", "list", "--json", token=user_token).stdout)
        [lab] = listed
        assert (lab["name"], lab["account"], lab["qos"]) == ("lab", "ml", "normal")
        assert lab["state"]["reachable"] is True
        assert sorted(n["name"] for n in lab["state"]["nodes"]) == sorted(NODES)
        text = cli("clusters", "list").stdout
        total = GPUS_PER_NODE * len(NODES)
        assert f"{len(NODES)} nodes" in text and f"/{total} GPUs in use" in text
        for node in NODES:  # the nodes table: each node with its GRES type and count
            [row] = [line for line in text.splitlines() if f" {node} " in line]
            assert f"{GPU_TYPE}: " in row and f"/{GPUS_PER_NODE}" in row, row

        removed = cli("clusters", "remove", "lab")
        assert removed.returncode == 0 and "cluster lab removed" in removed.stdout
        assert json.loads(cli("clusters", "list", "--json").stdout) == []
        assert cli("clusters", "remove", "lab").returncode == 1
