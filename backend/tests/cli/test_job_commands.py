"""`gpudeck submit --wait`, `show`, `logs [--follow]`, `resume`: the real command, a real API
and a real worker running real DDP ranks. The exit code says how the job ended."""

from __future__ import annotations

import json
import re
import time

from cli_harness import Cli
from e2e_helpers import WorkerProcess

SAE = json.dumps(
    {
        "d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 30, "metrics_interval": 5,
        "checkpoint_interval": 10,
        "dataset": {"type": "synthetic", "num_features": 32, "active_features": 3},
    }
)  # fmt: skip
FAULTY = json.dumps({"steps": 500, "fail_at_step": 5, "fail_rank": 1, "step_sleep_s": 0.01})
LONG_NAME = "sae-layer-12-resid-post-expansion-32-l1-0.15-seed-7-a-name-past-eighty-columns"


def job_id_of(stdout: str) -> int:
    return int(stdout.split()[1])  # "job 3 queued on ..."


def test_submit_wait_show_logs_and_resume_of_a_job_that_succeeds(
    cli: Cli, worker: WorkerProcess
) -> None:
    done = cli("submit", "sae", "--config", SAE, "--count", "2", "--name", LONG_NAME, "--wait")
    assert done.returncode == 0, done.stderr
    job = job_id_of(done.stdout)
    assert done.stderr.strip().endswith(f"job {job} succeeded"), done.stderr

    listing = cli("jobs")
    assert listing.returncode == 0 and LONG_NAME in listing.stdout  # whole, not cut at 80

    shown = cli("show", str(job))
    assert shown.returncode == 0, shown.stderr
    assert "succeeded" in shown.stdout and "30/30" in shown.stdout and LONG_NAME in shown.stdout

    log = cli("logs", str(job), "--rank", "0")
    assert log.returncode == 0 and "step 30: checkpoint written to" in log.stdout
    rank1 = cli("logs", str(job), "--rank", "1")
    assert "rank 1 joined the process group" in rank1.stdout

    saved = cli("checkpoints", str(job))
    assert saved.returncode == 0, saved.stderr
    steps = [line.split()[0] for line in saved.stdout.splitlines()[1:] if line.strip()]
    assert steps == ["30", "20", "10"], saved.stdout  # newest first; the default keeps 3
    assert "sae_weights.safetensors" in saved.stdout and "KiB" in saved.stdout
    assert f"/api/jobs/{job}/checkpoints/30/files/" in saved.stdout  # on this API's disk

    # It ran all its steps: one rule for the CLI, the API and the dashboard.
    refused = cli("resume", str(job))
    assert refused.returncode == 1 and "ran all its steps" in refused.stderr, refused

    # Its checkpoint at step 20 scored on the rows it kept out of training: the figures and
    # the density histogram in `show`.
    config = '{"step": 20, "batch_size": 8192}'
    scored = cli("submit", "sae_eval", "--on-output", str(job), "--config", config, "--wait")
    assert scored.returncode == 0, scored.stderr
    shown = cli("show", str(job_id_of(scored.stdout))).stdout
    assert "explained var." in shown and "dead % (never fired on the rows)" in shown, shown
    assert "Feature density" in shown and re.search(r"never .* \d+", shown), shown


def test_a_cancelled_job_resumes_once_and_says_where_it_starts(
    cli: Cli, worker: WorkerProcess
) -> None:
    long = json.loads(SAE) | {"steps": 100_000, "checkpoint_interval": 10}
    started = cli("submit", "sae", "--config", json.dumps(long), "--count", "2")
    job = job_id_of(started.stdout)
    while "step" not in cli("checkpoints", str(job)).stdout:
        time.sleep(0.2)
    assert cli("cancel", str(job)).returncode == 0
    while "cancelled" not in cli("show", str(job)).stdout:
        time.sleep(0.2)
    resumed = cli("resume", str(job))
    assert resumed.returncode == 0, resumed.stderr
    line = " ".join(resumed.stdout.split())
    again = job_id_of(resumed.stdout)
    assert line.endswith(f"(resumes job {job})") and " queued on " not in line, line
    assert re.search(rf"resumes\s+job {job}\s", cli("show", str(again)).stdout)
    twice = cli("resume", str(job))
    assert twice.returncode == 1 and f"by job {again}" in twice.stderr, twice
    cli("cancel", str(again))


def test_a_failed_job_exits_non_zero_with_its_cause(cli: Cli, worker: WorkerProcess) -> None:
    failed = cli("submit", "faulty", "--config", FAULTY, "--gpus", "2,3", "--wait")
    job = job_id_of(failed.stdout)
    cause = "rank 1: RuntimeError: injected failure at step 5"
    assert failed.returncode == 1
    assert failed.stderr.strip().splitlines()[-1] == f"job {job} failed: {cause}"

    followed = cli("logs", str(job), "--rank", "1", "--follow")
    assert followed.returncode == 1  # the job's status, also after following its log
    assert "RuntimeError: injected failure at step 5" in followed.stdout
    assert followed.stderr.strip().splitlines()[-1] == f"job {job} failed: {cause}"

    shown = cli("show", str(job)).stdout
    # The one-line cause comes before the traceback it summarises.
    assert shown.index(cause) < shown.index("Traceback (most recent call last)")


def test_logs_follow_streams_a_running_job_until_it_ends(cli: Cli, worker: WorkerProcess) -> None:
    config = json.dumps({"steps": 60, "step_sleep_s": 0.05})
    started = cli("submit", "faulty", "--config", config, "--gpus", "4,5")
    job = job_id_of(started.stdout)
    followed = cli("logs", str(job), "--follow")
    assert followed.returncode == 0, followed.stderr
    assert followed.stderr.strip().splitlines()[-1] == f"job {job} succeeded"
    assert "60/60" in followed.stderr  # the progress bar, drawn from the job's progress
    # The ranks' measured peak (their peak RSS on simulated devices), next to the estimate.
    peak = re.search(r"peak / device\s+(\d+\.\d) GiB", cli("show", str(job)).stdout)
    assert peak and float(peak.group(1)) > 0, cli("show", str(job)).stdout
