"""How a job on a Slurm cluster reads in `gpudeck show`, `jobs` and `submit`."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from gpudeck.cli.client import held_devices
from gpudeck.cli.slurm_lines import slurm_rows, submitted_line


def cluster_job(status: str = "queued", **slurm: Any) -> dict[str, Any]:
    view = {"partition": "gpu", "nodes_requested": 2, "state": None, "reason_code": None,
            "reason": None, "nodes": None, "unknown": False, "attempts": 0} | slurm  # fmt: skip
    return {"id": 5, "status": status, "cluster": "lab", "world_size": 4, "devices": [],
            "node": "lab", "slurm_job_id": "123", "slurm": view}  # fmt: skip


def test_a_pending_job_shows_slurms_state_and_reason() -> None:
    rows = dict(slurm_rows(cluster_job(state="PENDING", reason_code="devices_busy",
                                       reason="waiting for resources (Resources)")))  # fmt: skip
    assert rows == {
        "cluster": "lab (Slurm)", "slurm job": "123", "slurm state": "PENDING",
        "partition": "gpu", "slurm nodes": "2 requested", "attempts": "0",
        "reason": "waiting for resources (Resources) (devices_busy)",
    }  # fmt: skip


def test_a_running_job_shows_slurms_node_list_as_written_and_no_reason() -> None:
    rows = dict(slurm_rows(cluster_job("running", state="RUNNING", nodes="gpu[a]", attempts=2,
                                       reason="left over")))  # fmt: skip
    assert Text.from_markup(rows["slurm nodes"]).plain == "gpu[a]"  # not read as markup
    assert rows["attempts"] == "2" and "reason" not in rows


def test_slurm_silent_says_so_with_the_cause() -> None:
    rows = dict(slurm_rows(cluster_job("running", state="RUNNING", unknown=True,
                                       reason="squeue timed out")))  # fmt: skip
    assert "did not answer (squeue timed out)" in rows["slurm"]
    assert rows["slurm state"] == "RUNNING" and "reason" not in rows


def test_a_job_not_yet_submitted_and_one_on_own_nodes() -> None:
    job = cluster_job() | {"slurm_job_id": None}
    assert dict(slurm_rows(job))["slurm job"] == "not submitted yet"
    own = {"id": 6, "status": "running", "cluster": None, "node": "vm",
           "devices": [{"node": "vm", "index": 0}], "slurm": None}  # fmt: skip
    assert slurm_rows(own) == [] and held_devices(own) == "vm:0"


def test_jobs_and_submit_name_the_cluster() -> None:
    assert held_devices(cluster_job()) == "lab (Slurm)"
    assert submitted_line(cluster_job()) == (
        "job [bold]5[/bold] queued on Slurm cluster lab, partition gpu: Slurm places its 4 GPUs"
    )
