import { runAgainNote } from "../../hooks/useRunAgain";
import type { NewJobPrefill } from "../../hooks/useNewJobPrefill";

/** A note as a sentence: capitalised (the API's notes may start lower case). */
function sentence(note: string): string {
  return note.charAt(0).toUpperCase() + note.slice(1);
}

/** Above a prefilled form: the job it was run again from, or the job it follows up. */
export function PrefillNotes({ prefill }: { prefill: Pick<NewJobPrefill, "runAgain" | "followUp" | "afterId" | "afterJob"> }) {
  const { runAgain, followUp, afterId, afterJob } = prefill;
  return (
    <>
      {runAgain && (
        <p className="banner" data-testid="prefilled-note">
          {runAgainNote(runAgain)}
        </p>
      )}
      {followUp && (
        <p className="banner" data-testid="follow-up-note">
          <strong>{followUp.label}</strong> of job #{afterId}
          {afterJob ? ` ${afterJob.name}` : ""}
          {followUp.depends_on.length > 0 ? " (this job waits for it to succeed)" : ""}. {sentence(followUp.note)}
        </p>
      )}
    </>
  );
}
