"""`gpudeck clusters add slurm / list / remove`: the real command against a real API and the
real test cluster, agreeing with what the API answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from cli_harness import Cli
from harness import create_token, live_server
from slurm.cluster import GPU_TYPE, GPUS_PER_NODE, NODES, PARTITION, SlurmCluster
from slurm.helpers import ended, gate, wait_for
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.services.submit import cluster_target
from gpudeck.slurm import BatchSpec, SlurmClient, render


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


def test_the_gpu_types_an_estimate_fits_from_the_cli(
    settings: Settings,
    admin_token: str,
    session_factory: sessionmaker[Session],
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    """`gpudeck clusters types`: the partition's types from Slurm with their configured memory,
    which an estimate fits, and what a submit asks for or why it would be refused."""
    user_token = create_token(session_factory, "user", name="bob")
    cluster_target.FACTS.forget()  # facts another test read of a cluster named lab
    with live_server(settings) as url:
        cli = Cli(url, admin_token, tmp_path)
        added = cli(
            "clusters", "add", "slurm", "--name", "lab", "--partition", PARTITION,
            "--shared-dir", str(slurm_cluster.root / "shared"),
            "--slurm-conf", str(slurm_cluster.conf), "--gpu-memory", f"{GPU_TYPE}=80GiB",
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        fits = cli("clusters", "types", "lab", "--estimate", "30GiB", token=user_token)
        assert fits.returncode == 0, fits.stderr
        [row] = [line for line in fits.stdout.splitlines() if f" {GPU_TYPE} " in line]
        total = GPUS_PER_NODE * len(NODES)
        assert "80.0 GiB" in row and f" {total} " in row and " yes " in row, row
        assert "GPUDeck will request: any type" in fits.stdout

        shown = json.loads(cli("clusters", "types", "lab", "-p", PARTITION, "--estimate",
                               "90GiB", "--json").stdout)  # fmt: skip
        assert (shown["partition"], shown["types"][0]["fits"]) == (PARTITION, False)
        refused = cli("clusters", "types", "lab", "--estimate", "90GiB")
        assert refused.returncode == 0 and "GPUDeck will request" not in refused.stdout
        assert "a submit would be refused: needs 90.00 GiB per device" in refused.stderr

        bad = cli("clusters", "types", "lab", "--estimate", "lots")
        assert bad.returncode == 2 and "--estimate" in bad.stderr, bad.stderr
        unknown = cli("clusters", "types", "lab", "--partition", "nosuch")
        assert unknown.returncode == 1 and "partition" in unknown.stderr, unknown.stderr


def test_gpus_lists_the_clusters_nodes_after_the_devices(
    settings: Settings,
    admin_token: str,
    slurm_cluster: SlurmCluster,
    slurm: SlurmClient,
    spec_for: Callable[..., BatchSpec],
    tmp_path: Path,
) -> None:
    """`gpudeck gpus`: a table per cluster, each node's state, GPUs in use with Slurm's indices
    and who holds them (a job not GPUDeck's reads as another Slurm job's); a cluster that does
    not answer is one line saying since when."""
    release = tmp_path / "release"
    with live_server(settings) as url:
        cli = Cli(url, admin_token, tmp_path)
        added = cli(
            "clusters", "add", "slurm", "--name", "lab", "--partition", PARTITION,
            "--shared-dir", str(slurm_cluster.root / "shared"),
            "--slurm-conf", str(slurm_cluster.conf),
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        job = slurm.submit(render(spec_for(["sh", "-c", gate(release)], gpus_per_node=2)))
        try:
            holder = wait_for(slurm, [job], lambda s: s[job].state == "running")[job].nodes
            shown = cli("gpus")
        finally:
            release.touch()
            wait_for(slurm, [job], ended)
        assert shown.returncode == 0, shown.stderr
        assert "lab (Slurm cluster, access local)" in shown.stdout
        assert "utilization, memory and temperature are not measured" in shown.stdout
        for node in NODES:
            [row] = [line for line in shown.stdout.splitlines() if f" {node} " in line]
            if node == holder:
                assert f"{GPU_TYPE}: 2/{GPUS_PER_NODE} (0, 1)" in row, row
                assert "other Slurm jobs: 2" in row, row
            else:
                assert f"{GPU_TYPE}: 0/{GPUS_PER_NODE}" in row and " idle " in row, row

        slurm_cluster.pause_controller()
        try:
            silent = cli("gpus")
        finally:
            slurm_cluster.resume_controller()
        assert silent.returncode == 0, silent.stderr
        assert "lab (Slurm cluster, access local): unreachable since " in silent.stdout
        assert "scontrol did not answer" in silent.stdout
