"""A failed job's one-line cause: the last exception line, not the first traceback line."""

from __future__ import annotations

from gpudeck.schemas.failure import failed_rank, failure_cause

TRACEBACK = """rank 0 failed:
Traceback (most recent call last):
  File "/app/gpudeck/engine/rank.py", line 150, in run_rank
    kind.resolve_train()(ctx, config)
  File "/app/gpudeck/kinds/sae/data.py", line 101, in open_file
    raise FileNotFoundError(f"datasets directory {root} missing")
FileNotFoundError: datasets directory /x missing
"""


def test_the_cause_is_the_exception_line_with_its_rank() -> None:
    assert failure_cause(TRACEBACK) == "rank 0: FileNotFoundError: datasets directory /x missing"


def test_a_multi_line_message_gives_its_first_line() -> None:
    text = TRACEBACK.replace(
        "FileNotFoundError: datasets directory /x missing",
        "ValueError: shapes do not match\n  expected (16, 64)\ngot (16, 32)",
    )
    assert failure_cause(text) == "rank 0: ValueError: shapes do not match"


def test_a_chained_exception_gives_the_last_one() -> None:
    text = TRACEBACK + (
        "\nDuring handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n'
        "RuntimeError: could not open the dataset\n"
    )
    assert failure_cause(text) == "rank 0: RuntimeError: could not open the dataset"


def test_a_killed_rank_is_named_without_its_log() -> None:
    text = "rank 1 was killed by SIGKILL (exit code -9); the end of its log:\nstep 5: loss=1\n"
    assert failure_cause(text) == "rank 1 was killed by SIGKILL (exit code -9)"


def test_plain_reasons_are_kept_and_long_ones_cut() -> None:
    assert failure_cause(None) is None
    assert failure_cause("no heartbeat for 30 s") == "no heartbeat for 30 s"
    assert len(failure_cause("x" * 1000) or "") == 300


def test_a_job_stopped_for_memory_says_so_before_its_traceback() -> None:
    verdict = "host memory limit 1 GiB exceeded by rank 1: an allocation failed past its share"
    assert failure_cause(f"{verdict}\n{TRACEBACK}") == verdict


def test_a_job_killed_over_its_shared_reservation_says_so_before_its_traceback() -> None:
    verdict = "used 9.3 GiB of its 8.0 GiB reservation on node/2"
    assert failure_cause(f"{verdict}\nrank 0 failed:\n{TRACEBACK}") == verdict


def test_a_torchrun_ranks_prefixed_traceback_gives_its_exception_and_rank() -> None:
    """A plain script's rank under torchrun prints every line as "[rank1]: ..." once it has
    joined a process group (torch's exception hook): the cause is still its exception line
    (before: "rank 1 failed: exit code 1: To enable traceback see ..."), and the job page
    opens that rank's log."""
    error = (
        "rank 1 failed: exit code 1: To enable traceback see: "
        "https://pytorch.org/docs/stable/elastic/errors.html\n"
        "the end of its log:\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/code/train.py", line 5, in <module>\n'
        '[rank1]:     open("/data/shard-7.bin")\n'
        "[rank1]: FileNotFoundError: [Errno 2] No such file or directory: '/data/shard-7.bin'\n"
    )
    cause = "rank 1: FileNotFoundError: [Errno 2] No such file or directory: '/data/shard-7.bin'"
    assert failure_cause(error) == cause
    assert failed_rank(error) == 1
    assert failed_rank("no heartbeat for over 6 s") is None


def test_a_part_of_a_job_across_nodes_keeps_its_node_in_the_cause() -> None:
    error = "on node node-b: " + TRACEBACK.replace("rank 0", "rank 3")
    assert failure_cause(error) == (
        "on node node-b: rank 3: FileNotFoundError: datasets directory /x missing"
    )
    assert failed_rank(error) == 3
