import type { ReactNode } from "react";
import { Link, useNavigate } from "react-router-dom";
import { isTerminal, type Job, type JobKindInfo } from "../../client/types";
import { useCheckpoints, useFollowUp, useResumeJob } from "../../hooks/queries";
import { useHoldReleaseCancel } from "../../hooks/useHoldReleaseCancel";
import { ConfirmButton } from "../ConfirmButton";

/** Cancel asks first: a running job stops after its final checkpoint and cannot be undone. */
function CancelButton({ job }: { job: Job }) {
  const actions = useHoldReleaseCancel({ type: "job", id: job.id });
  const cancelling = actions.pending === "cancel";
  return (
    <span className="confirm">
      <ConfirmButton
        label={cancelling ? "Cancelling…" : "Cancel"}
        question={`Stop job #${job.id}?`}
        confirmLabel="Stop it"
        keepLabel="Keep running"
        onConfirm={actions.cancel}
        disabled={cancelling}
        testId="cancel"
        confirmTestId="confirm-cancel"
        small={false}
        {...actions.confirm}
      />
      {/* The error shows here too: the confirmation is gone by the time the request fails. */}
      {actions.error?.action === "cancel" && !actions.confirm.asking && (
        <span className="field-error" role="alert" data-testid="cancel-error">
          could not cancel: {actions.error.message}
        </span>
      )}
    </span>
  );
}

/** Resume is offered only for a job that stopped early and left a checkpoint to start from. */
function ResumeButton({ job }: { job: Job }) {
  const navigate = useNavigate();
  const resume = useResumeJob(job.id);
  const checkpoints = useCheckpoints(job.id, false);
  if (job.status === "succeeded" || (checkpoints.data ?? []).length === 0) return null;
  return (
    <>
      <button
        type="button"
        className="button"
        disabled={resume.isPending}
        onClick={() => resume.mutate(undefined, { onSuccess: (next) => navigate(`/jobs/${next.id}`) })}
        data-testid="resume"
      >
        Resume from last checkpoint
      </button>
      {resume.error && <span className="field-error">{resume.error.message}</span>}
    </>
  );
}

/**
 * "Train an SAE on this output", "Evaluate a checkpoint" (the label is the kind's): the new-job
 * form of the follow-up kind, prefilled from this job; a job still running is named in
 * depends_on when the follow-up needs its output. Whether one is offered (a failed job wrote
 * no output, but its checkpoints can be scored) is the API's answer.
 */
function FollowUpLink({ job, kind }: { job: Job; kind: JobKindInfo | undefined }) {
  const offered = kind?.offers_follow_up ?? false;
  const followUp = useFollowUp(offered ? job.id : null);
  if (!offered || !followUp.data) return null;
  const link = (
    <Link className="button primary" to={`/new?kind=${encodeURIComponent(followUp.data.kind)}&after=${job.id}`} data-testid="follow-up">
      {followUp.data.label}
    </Link>
  );
  // A follow-up that does not wait for an unfinished job reads what it wrote so far (an
  // evaluation scores its checkpoints): offered once there is one, not on a queued job.
  const readsSoFar = followUp.data.depends_on.length === 0 && job.status !== "succeeded";
  return readsSoFar ? <OnceCheckpointed job={job}>{link}</OnceCheckpointed> : link;
}

function OnceCheckpointed({ job, children }: { job: Job; children: ReactNode }) {
  const checkpoints = useCheckpoints(job.id, !isTerminal(job.status));
  return (checkpoints.data ?? []).length > 0 ? children : null;
}

export function JobActions({ job, kind }: { job: Job; kind?: JobKindInfo }) {
  return (
    <div className="actions">
      {isTerminal(job.status) ? <ResumeButton job={job} /> : <CancelButton job={job} />}
      <FollowUpLink job={job} kind={kind} />
      <Link className="button" to={`/new?kind=${encodeURIComponent(job.kind)}&from=${job.id}`} data-testid="run-again">
        Run again with these settings
      </Link>
    </div>
  );
}
