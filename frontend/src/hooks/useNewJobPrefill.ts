import { useMemo } from "react";
import { useSearchParams } from "react-router-dom";
import type { JobKind, KindConfig } from "../client/types";
import { useCheckpoints, useFollowUp, useJobById } from "./queries";

export const DEFAULT_KIND = "sae";

/**
 * What the new-job page starts from, read from its URL: the kind (/new?kind=linreg; /new is
 * sae), "run again with these settings" (&from=12: job 12's config, name and devices), a
 * kind's follow-up of a job (&after=12: its config, name, depends_on and checkpoint steps),
 * and whether the sweep opens ticked (&sweep=1).
 */
export function useNewJobPrefill() {
  const [params, setParams] = useSearchParams();
  const kind: JobKind = params.get("kind") || DEFAULT_KIND;
  const fromId = Number(params.get("from")) || null;
  const source = useJobById(fromId);
  const afterId = Number(params.get("after")) || null;
  const followUp = useFollowUp(afterId);
  const afterJob = useJobById(afterId);
  // a follow-up's checkpoint step: the source's steps to pick from, newest first
  const stepField = followUp.data?.checkpoint_field ?? null;
  const checkpoints = useCheckpoints(afterId ?? 0, false, afterId !== null && stepField !== null);
  const steps = useMemo(
    () =>
      checkpoints.data
        ?.map((c) => c.step)
        .sort((a, b) => b - a)
        .map(String),
    [checkpoints.data],
  );
  // a job of another kind prefills nothing: the user switched kind after following the link
  const runAgain = source.data?.kind === kind ? source.data : undefined;
  const followConfig = followUp.data?.kind === kind ? followUp.data.config : undefined;
  const config: KindConfig | undefined = runAgain ? runAgain.config : followConfig;
  return {
    kind,
    setKind: (next: JobKind) => setParams(next === DEFAULT_KIND ? {} : { kind: next }, { replace: true }),
    /** the job run again, when it is of this kind */
    runAgain,
    /** the follow-up offered by job `afterId` (its kind, label, note, name, depends_on) */
    followUp: followUp.data,
    afterId,
    afterJob: afterJob.data,
    /** the config the form starts from, else the kind's defaults */
    config,
    /** a prefill is still loading: the form waits for it rather than starting at the defaults */
    waiting: (fromId !== null && source.isPending) || (afterId !== null && followUp.isPending),
    stepField,
    steps,
    dependsOn: followUp.data?.depends_on.join(", ") ?? "",
    sweepOn: params.get("sweep") === "1",
  };
}

export type NewJobPrefill = ReturnType<typeof useNewJobPrefill>;
