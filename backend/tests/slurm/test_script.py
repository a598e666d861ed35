"""The batch script from typed values (no cluster needed)."""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudeck.slurm import ArraySpec, BatchSpec, render, split_array
from gpudeck.slurm.script import slurm_time

OUT = PurePosixPath("/shared/gpudeck/jobs/7")


def spec(**fields: object) -> BatchSpec:
    fields = {"argv": ("python", "-m", "train"), "output_dir": OUT, **fields}
    return BatchSpec(gpudeck_job_id=7, **fields)  # type: ignore[arg-type]


def sbatch_options(script: str) -> list[str]:
    return [
        line.removeprefix("#SBATCH ") for line in script.splitlines() if line.startswith("#SBATCH")
    ]


def test_the_directives_carry_the_typed_values() -> None:
    script = render(
        spec(partition="gpu", account="lab", qos="normal", nodes=2, ntasks_per_node=4,
             gpus_per_node=4, gpu_type="h100", mem_bytes_per_node=3 * 1024**3 + 1,
             time_limit_s=90 * 60 + 1, signal_before_s=120)
    )  # fmt: skip
    assert sbatch_options(script) == [
        "--job-name=gpudeck-7",
        "--comment=gpudeck:7",
        "--nodes=2",
        "--ntasks-per-node=4",
        "--output=/shared/gpudeck/jobs/7/slurm-%j.out",
        "--partition=gpu",
        "--account=lab",
        "--qos=normal",
        "--gres=gpu:h100:4",
        "--mem=3073M",  # rounded up to the MiB
        "--time=0-01:31:00",  # rounded up to the minute
        "--signal=B:USR1@120",
    ]


def test_an_array_numbers_its_members_from_its_offset_and_waits_for_the_one_before() -> None:
    script = render(spec(array=ArraySpec(count=1001, max_parallel=8, offset=2002, after="41")))
    assert sbatch_options(script)[-2:] == ["--array=0-1000%8", "--dependency=afterany:41"]
    assert "--output=/shared/gpudeck/jobs/7/slurm-%A_%a.out" in sbatch_options(script)
    assert "export GPUDECK_MEMBER_INDEX=$((2002 + SLURM_ARRAY_TASK_ID))" in script


@given(st.lists(st.text(min_size=0, max_size=20), min_size=1, max_size=5))
def test_any_argv_reaches_srun_as_the_same_words(argv: list[str]) -> None:
    # A quoted word may hold a newline: the command runs from `srun` to its ` &`.
    script = render(spec(argv=tuple(argv)))
    command = script.split("\n  srun ", 1)[1].split(" &\n  ranks=$!", 1)[0]
    words = shlex.split(command)
    assert words[0] == "--kill-on-bad-exit=1"
    # Each rank creates its attempt's file, then execs the command as given.
    assert words[1:6] == ["/bin/sh", "-c", 'touch -- "$1" && shift && exec "$@"',
                          "gpudeck-rank", "$started.$attempt"]  # fmt: skip
    assert words[6:] == argv


def test_environment_values_are_quoted() -> None:
    script = render(spec(env={"WANDB_NOTES": "it's; rm -rf /"}))
    assert "export WANDB_NOTES='it'\"'\"'s; rm -rf /'" in script.splitlines()


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"partition": "gpu --qos=high"}, "partition"),
        ({"gpu_type": "h100\n#SBATCH --exclusive"}, "gpu_type"),
        ({"output_dir": PurePosixPath("/shared/my jobs")}, "output_dir"),
        ({"env": {"A B": "x"}}, "environment variable"),
        ({"argv": ()}, "argv"),
        ({"nodes": 0}, "nodes"),
    ],
)
def test_values_that_are_not_slurms_are_refused(fields: dict[str, object], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        spec(**fields)


@pytest.mark.parametrize(
    ("seconds", "text"), [(1, "0-00:01:00"), (60, "0-00:01:00"), (86_400 + 61, "1-00:02:00")]
)
def test_time_limits_are_whole_minutes_rounded_up(seconds: int, text: str) -> None:
    assert slurm_time(seconds) == text


@given(st.integers(1, 10_000), st.integers(1, 2_000))
def test_a_split_sweep_covers_every_member_once_in_arrays_slurm_accepts(
    members: int, max_array_size: int
) -> None:
    chunks = split_array(members, max_array_size)
    covered = [m for c in chunks for m in range(c.offset, c.offset + c.count)]
    assert covered == list(range(members))
    assert all(1 <= c.count <= max_array_size for c in chunks)


def test_an_array_gives_each_task_its_own_directory_logs_and_stop_marker() -> None:
    script = render(
        spec(
            argv=("python", "-m", "gpudeck.engine.srun", "/shared/arrays/sweep-3-10"),
            rank_logs=PurePosixPath("/shared/arrays/sweep-3-10"),
            signal_marker=PurePosixPath("/shared/arrays/sweep-3-10/stop-signal"),
            label="sweep-3",
            array=ArraySpec(count=498, max_parallel=3, offset=2002, after="41"),
        )
    )
    assert "#SBATCH --job-name=gpudeck-sweep-3\n" in script
    assert "#SBATCH --comment=gpudeck:sweep-3\n" in script
    assert "#SBATCH --array=0-497%3\n#SBATCH --dependency=afterany:41\n" in script
    assert 'export GPUDECK_TASK_DIR="/shared/arrays/sweep-3-10/task-$SLURM_ARRAY_TASK_ID"' in script
    assert "  srun --kill-on-bad-exit=1 --output=/shared/arrays/sweep-3-10/task-%a/rank%t.log " in (
        script
    )
    # Each task's attempts are its own: Slurm gives every array task a job id of its own.
    assert 'started="/shared/gpudeck/jobs/7/.gpudeck-step-$SLURM_JOB_ID-' in script
    assert 'rm -f "$GPUDECK_TASK_DIR"/stop-signal' in script
    assert 'trap \'touch "$GPUDECK_TASK_DIR"/stop-signal; kill -USR1' in script


def test_srun_starts_again_only_while_no_rank_started_within_the_bound() -> None:
    script = render(spec(step_retry_s=240))
    started = "/shared/gpudeck/jobs/7/.gpudeck-step-$SLURM_JOB_ID-${SLURM_RESTART_COUNT:-0}"
    assert f'started="{started}"' in script
    assert "retry_until=$((SECONDS + 240)) pause_s=1 attempt=0" in script
    loop = script.split("\nwhile :; do\n", 1)[1]
    # The attempt's file decides, before the bound is even read; USR1 stops the retries.
    ran = loop.index("[[ -e $started.$attempt || -n $signalled ]] && break")
    assert ran < loop.index("(( SECONDS + pause_s <= retry_until )) || break")
    # The pause is a child the trap can end (USR1 to $ranks), and doubles up to 30 s.
    assert 'sleep "$pause_s" & ranks=$!' in loop
    assert "pause_s=$((pause_s * 2 > 30 ? 30 : pause_s * 2))" in loop
    assert script.index("signalled=\n") < script.index("trap ")
    assert script.endswith('rm -f "$started".*\nexit "$status"\n')


def test_a_negative_retry_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="step_retry_s"):
        spec(step_retry_s=-1)
