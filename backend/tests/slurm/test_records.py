"""Reading Slurm's output, and its words kept in step with GPUDeck's (no cluster needed)."""

from __future__ import annotations

import typing

import pytest

from gpudeck.models.job import JobStatus
from gpudeck.schemas.jobs import ReasonCode
from gpudeck.slurm import states
from gpudeck.slurm.records import (
    expand,
    expand_hostlist,
    key_values,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_squeue,
)


def test_every_word_is_a_gpudeck_status_or_unknown() -> None:
    words = set(typing.get_args(states.State))
    assert words - {"unknown"} <= {s.value for s in JobStatus}
    assert set(states._STATES.values()) == words - {"unknown"}


def test_every_reason_code_is_a_queue_reason_or_the_clusters_own() -> None:
    codes = set(typing.get_args(states.ReasonCode))
    assert codes - {"cluster"} <= set(typing.get_args(ReasonCode))
    assert {code for code, _ in states._REASONS.values()} <= codes


def test_pending_reasons_read_in_gpudecks_words() -> None:
    assert states.reason_of("JobArrayTaskLimit")[0] == "sweep"  # type: ignore[index]
    assert states.reason_of("QOSMaxGRESPerUser") == (
        "quota", "a limit of its Slurm account or QOS (QOSMaxGRESPerUser)"
    )  # fmt: skip
    assert states.reason_of("SomethingNew") == ("cluster", "Slurm says SomethingNew")
    assert states.reason_of("None") is None


def test_grouped_pending_tasks_are_one_state_each() -> None:
    assert expand("12_[1,3-5%2]") == ["12_1", "12_3", "12_4", "12_5"]
    assert expand("12_7") == ["12_7"] and expand("12") == ["12"]


def test_sacct_lines_read_state_exit_code_and_gpus() -> None:
    [cancelled, timed_out] = parse_sacct(
        "5|5|CANCELLED by 0|0:15|None|n1|billing=2,cpu=2,gres/gpu:h100=2,gres/gpu=2|gpudeck:9\n"
        "6_2|8|TIMEOUT|0:0|TimeLimit|n[1-2]|cpu=4,gres/gpu=4|gpudeck:a|b\n"
    )
    assert (cancelled.state, cancelled.slurm_state, cancelled.exit_signal, cancelled.gpus) == (
        "cancelled", "CANCELLED", 15, 2
    )  # fmt: skip
    assert (timed_out.job_id, timed_out.state, timed_out.comment) == (
        "6_2",
        "timeout",
        "gpudeck:a|b",
    )


def test_a_job_squeue_lists_as_completed_exited_0_before_sacct_has_its_record() -> None:
    """Seen in CI: the job ended 0.1 s after it started; squeue said COMPLETED, slurmdbd's record
    still said RUNNING, and the job read `succeeded` with no exit code. COMPLETED means every
    process exited 0; a failure's code waits for sacct."""
    [done, failed] = parse_squeue(
        "7|7|COMPLETED|None|1|n1|gres/gpu:2|gpudeck:3\n8|8|FAILED|NonZeroExitCode|1|n1|N/A|x\n"
    )
    assert (done.state, done.exit_code, failed.state, failed.exit_code) == (
        "succeeded", 0, "failed", None
    )  # fmt: skip


def test_node_records_keep_values_with_spaces_and_read_gpus_in_use() -> None:
    line = (
        "NodeName=n1 CPUAlloc=2 CPUTot=4 Gres=gpu:h100:2(S:0-1),gpu:a100:1 "
        "GresUsed=gpu:h100:2(IDX:0-1),gpu:a100:0(IDX:N/A) OS=Linux 6.1 #1 SMP RealMemory=4096 "
        "AllocMem=128 State=MIXED Partitions=gpu,debug Reason=Not responding [root@x]"
    )
    assert key_values(line)["OS"] == "Linux 6.1 #1 SMP"
    [node] = parse_nodes(line)
    assert (node.state, node.partitions, node.cpus_allocated) == ("mixed", ("gpu", "debug"), 2)
    assert [(g.type, g.count, g.used, g.used_indices) for g in node.gpus] == [
        ("h100", 2, 2, (0, 1)), ("a100", 1, 0, ())
    ]  # fmt: skip


def test_partition_records_read_name_state_nodes_and_time_limit() -> None:
    stdout = (
        "PartitionName=gpu AllowGroups=ALL Default=YES QoS=N/A DefaultTime=NONE Hidden=NO"
        " MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 Nodes=n[1-2] State=UP TotalNodes=2\n"
        "PartitionName=debug AllowGroups=ALL Default=NO QoS=N/A MaxTime=01:00:00 Nodes=(null)"
        " State=DRAIN TotalNodes=0\n"
    )
    [gpu, debug] = parse_partitions(stdout)
    assert (gpu.name, gpu.state, gpu.nodes, gpu.max_time) == ("gpu", "up", "n[1-2]", "UNLIMITED")
    assert (debug.name, debug.state, debug.nodes, debug.max_time) == (
        "debug", "drain", None, "01:00:00",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("n1", ["n1"]),
        ("n[1-3,7],gpu05", ["n1", "n2", "n3", "n7", "gpu05"]),
        ("g[08-10]", ["g08", "g09", "g10"]),
        ("rack[1-2]-a,login", ["rack1-a", "rack2-a", "login"]),
        ("", []),
    ],
)
def test_a_slurm_node_list_expands_as_scontrol_show_hostnames_would(
    hostlist: str, names: list[str]
) -> None:
    assert expand_hostlist(hostlist) == names
