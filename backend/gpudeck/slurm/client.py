"""GPUDeck's calls to one Slurm cluster, through an injected command runner.

A poll costs the cluster one `squeue` (slurmctld) and at most one `sacct` (slurmdbd) whatever
the number of jobs: both take the job ids as one `-j` list. squeue answers for what slurmctld
still holds (live jobs, and ended ones for MinJobAge); sacct for the rest, for an ended job's
exit code, and for the tasks of an array that have left squeue. When slurmctld does not answer,
a job reads `unknown` with the cause, unless slurmdbd already holds its end: never `failed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpudeck.slurm.errors import SlurmError, SlurmRefused, SlurmUnreachable
from gpudeck.slurm.records import (
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    JobState,
    NodeInfo,
    PartitionInfo,
    parse_config,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_squeue,
    unknown,
)
from gpudeck.slurm.runner import CommandResult, CommandRunner, CommandTimedOut
from gpudeck.slurm.ssh import LoginNodeUnreachable
from gpudeck.slurm.states import TERMINAL

# What Slurm's commands print when the daemon they need does not answer.
_SILENCE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Zero Bytes were transmitted",
    "Communication connection failure",
    "Unable to connect to database",
    "slurmdbd",
)
CANCEL_PER_COMMAND = 500
_THROTTLE_FINE = ("No error", "Job has already finished")
# scancel exits with Slurm's error code, modulo 256, and may say nothing (a signal to an array
# task that has ended): ESLURM_ALREADY_DONE (2021) and ESLURM_INVALID_JOB_ID (2017).
_GONE_EXITS = (2021 % 256, 2017 % 256)
_GONE = ("Invalid job id specified", "already completing or completed")


@dataclass(frozen=True)
class SlurmClient:
    run: CommandRunner
    # Slurm's clients give up after MessageTimeout (10 s by default) and retry; past this the
    # runner stops waiting and the answer is "unreachable".
    timeout_s: float = 30.0

    # -- jobs ------------------------------------------------------------------------------

    def submit(self, script: str) -> str:
        """The job id sbatch gives `script`; SlurmRefused with sbatch's own message if it
        refuses (nothing is queued then)."""
        done = self._call(["sbatch", "--parsable"], input_text=script)
        if done.returncode != 0:
            raise SlurmRefused(_message(done))
        return done.stdout.strip().split(";", 1)[0]  # "<id>;<cluster>" on a federation

    def find(self, job_name: str) -> list[str]:
        """The ids of the jobs named `job_name` that slurmctld holds (any state): after an
        sbatch that timed out, whether Slurm queued the job anyway."""
        argv = ["squeue", "--noheader", "--array", "--states=all", f"--name={job_name}", "-o", "%i"]
        return self._checked(argv).stdout.split()

    def poll(self, job_ids: Iterable[str]) -> dict[str, JobState]:
        """Every job, and every task of every array, among `job_ids` (plain or array job ids):
        Slurm's name for it -> its state. An id nothing is known of reads `unknown`."""
        ids = sorted(set(job_ids), key=_numeric)
        if not ids:
            return {}
        found: dict[str, JobState] = {}
        try:
            found = {s.job_id: s for s in self._squeue(ids)}
            controller_cause = None
        except SlurmError as exc:
            controller_cause = unanswered(exc, "slurmctld")
        if wanted := self._sacct_ids(ids, found, controller_cause):
            try:
                self._merge_sacct(found, self._sacct(wanted), controller_cause)
            except SlurmError as exc:
                controller_cause = controller_cause or unanswered(exc, "slurmdbd")
        if controller_cause is None:
            _removed_while_pending(found)
        named = {s.array_job_id for s in found.values()} | set(found)
        for job_id in ids:
            if job_id not in named:
                found[job_id] = unknown(
                    job_id, controller_cause or f"neither squeue nor sacct knows job {job_id}"
                )
        return found

    def cancel(self, job_id: str, array_task: int | None = None) -> None:
        """scancel the job (or one task of an array); a job already ended is no error."""
        self._scancel([_task(job_id, array_task)])

    def cancel_many(self, job_ids: Sequence[str]) -> None:
        """scancel many jobs or array tasks ("123", "123_4"), a few hundred a command: a
        cancelled sweep's thousand pending members cost a few calls, not a thousand."""
        for start in range(0, len(job_ids), CANCEL_PER_COMMAND):
            self._scancel(list(job_ids[start : start + CANCEL_PER_COMMAND]))

    def signal(self, job_id: str, signal: str = "USR1", array_task: int | None = None) -> None:
        """Signal the batch shell, which passes it to every rank (the script's trap): USR1 asks
        for a final checkpoint before a cancel."""
        self._scancel(["--batch", f"--signal={signal}", _task(job_id, array_task)])

    def set_array_throttle(self, array_job_id: str, max_parallel: int) -> None:
        """At most `max_parallel` tasks of the array running, from now on."""
        done = self._call(
            ["scontrol", "update", f"JobId={array_job_id}", f"ArrayTaskThrottle={max_parallel}"]
        )
        # Tasks that have ended cannot take it ("1_0-1: Job has already finished; 1_2-11: No
        # error"): the rest of the array did.
        said = [part.split(": ", 1)[-1] for part in _message(done).split("; ")]
        if done.returncode != 0 and not all(w in _THROTTLE_FINE for w in said):
            raise SlurmRefused(_message(done))

    # -- the cluster -----------------------------------------------------------------------

    def nodes(self) -> list[NodeInfo]:
        """Every node with its GPUs (GRES) and those in use."""
        return parse_nodes(self._checked(["scontrol", "-d", "-o", "show", "node"]).stdout)

    def partitions(self) -> list[PartitionInfo]:
        """Every partition, with its state, nodes and time limit (hidden ones included)."""
        argv = ["scontrol", "-a", "-o", "show", "partition"]
        return parse_partitions(self._checked(argv).stdout)

    def config(self) -> dict[str, str]:
        """slurmctld's configuration (MaxArraySize, MinJobAge, ...)."""
        return parse_config(self._checked(["scontrol", "show", "config"]).stdout)

    def max_array_size(self) -> int:
        return int(self.config()["MaxArraySize"])

    # -- the commands ----------------------------------------------------------------------

    def _squeue(self, ids: Sequence[str]) -> list[JobState]:
        # --states=all: ended jobs too, for MinJobAge. --array: one line per task, pending ones
        # included, so a throttle can be read from it.
        argv = ["squeue", "--noheader", "--array", "--states=all", f"--format={SQUEUE_FORMAT}"]
        done = self._call([*argv, f"--jobs={','.join(ids)}"])
        if done.returncode != 0:
            if len(ids) == 1 and "Invalid job id" in done.stderr:
                return []  # one id asked for and gone: squeue says so only for a single id
            raise _error(done)
        return parse_squeue(done.stdout)

    def _sacct(self, ids: Sequence[str]) -> list[JobState]:
        # -X: the allocation, not its steps; -j without -S reads from the epoch.
        argv = ["sacct", "--noheader", "--parsable2", "-X", f"--format={SACCT_FIELDS}"]
        done = self._call([*argv, f"--jobs={','.join(ids)}"])
        if done.returncode != 0:
            raise _error(done)
        return parse_sacct(done.stdout)

    @staticmethod
    def _sacct_ids(
        ids: Sequence[str], found: dict[str, JobState], controller_cause: str | None
    ) -> list[str]:
        """Ids squeue cannot settle: gone from it, ended (for the exit code), or arrays (tasks
        that ended leave squeue after MinJobAge while others run). All of them when slurmctld
        is silent: slurmdbd may still hold their ends."""
        if controller_cause is not None:
            return list(ids)
        settled = {
            s.job_id for s in found.values() if s.state not in TERMINAL and "_" not in s.job_id
        }
        return [i for i in ids if i not in settled]

    @staticmethod
    def _merge_sacct(
        found: dict[str, JobState], records: list[JobState], controller_cause: str | None
    ) -> None:
        for record in records:
            listed = found.get(record.job_id)
            # squeue's word is the fresher one for a live job, and for an ended job that
            # slurmdbd has not heard of yet (its record still says RUNNING).
            if listed is not None and (
                listed.state not in TERMINAL or record.state not in TERMINAL
            ):
                continue
            if controller_cause is not None and record.state not in TERMINAL:
                # slurmdbd's last word on a live job may be stale: it heard nothing either.
                record = unknown(record.job_id, controller_cause)
            found[record.job_id] = record

    def _scancel(self, args: list[str]) -> None:
        done = self._call(["scancel", *args])
        if done.returncode in (0, *_GONE_EXITS) or any(g in done.stderr for g in _GONE):
            return
        raise _error(done)

    def _checked(self, argv: list[str]) -> CommandResult:
        done = self._call(argv)
        if done.returncode != 0:
            raise _error(done)
        return done

    def _call(self, argv: list[str], input_text: str | None = None) -> CommandResult:
        try:
            return self.run(argv, input_text=input_text, timeout_s=self.timeout_s)
        except CommandTimedOut as exc:
            raise SlurmUnreachable(str(exc)) from exc
        except OSError as exc:  # the command is not there (no Slurm client on this host)
            raise SlurmError(f"{argv[0]}: {exc}") from exc


def unanswered(exc: SlurmError, silent: str) -> str:
    """Why nothing could be read, in one sentence: "`silent` did not answer: <Slurm's words>",
    or, when ssh could not reach the login node at all, that (it names the node)."""
    if isinstance(exc.__cause__, LoginNodeUnreachable):
        return str(exc)
    return f"{silent} did not answer: {exc}"


REMOVED_WHILE_PENDING = "removed from its array before it started (scancel of a pending task)"


def _removed_while_pending(found: dict[str, JobState]) -> None:
    """An array task slurmdbd still counts as pending (its array's pending range) that squeue,
    which lists every pending task of an array, no longer lists was cancelled before it
    started: Slurm 22.05 then only shrinks the range and keeps no record of the task."""
    for key, record in list(found.items()):
        if "_" in key and record.source == "sacct" and record.state == "queued":
            found[key] = JobState(
                key, "cancelled", slurm_state="CANCELLED", reason=REMOVED_WHILE_PENDING,
                source="sacct",
            )  # fmt: skip


def _task(job_id: str, array_task: int | None) -> str:
    return job_id if array_task is None else f"{job_id}_{array_task}"


def _numeric(job_id: str) -> tuple[int, str]:
    head = job_id.split("_", 1)[0]
    return (int(head) if head.isdigit() else -1, job_id)


def _message(done: CommandResult) -> str:
    """Slurm's own words, without the `sbatch: error: ` prefixes."""
    lines = [line.split("error: ", 1)[-1].strip() for line in done.stderr.splitlines()]
    return "; ".join(line for line in lines if line) or f"{done.argv[0]} exited {done.returncode}"


def _error(done: CommandResult) -> SlurmError:
    message = _message(done)
    if any(s in done.stderr for s in _SILENCE):
        return SlurmUnreachable(message)
    return SlurmError(message)
