import { useEffect, useMemo, useState, type FormEvent } from "react";
import { deviceKey } from "../client/types";
import { JobForm } from "../components/JobForm";
import { ESTIMATE_DEVICE_TYPE } from "../components/MemoryFigures";
import { PageHeader } from "../components/PageHeader";
import { ClusterPicker } from "../components/newJob/ClusterPicker";
import { Conflict } from "../components/newJob/Conflict";
import { DevicePicker } from "../components/newJob/DevicePicker";
import { EstimatePanel } from "../components/newJob/EstimatePanel";
import { JobIdentity } from "../components/newJob/JobIdentity";
import { PrefillNotes } from "../components/newJob/PrefillNotes";
import { Scheduling } from "../components/newJob/Scheduling";
import { ShareToggle } from "../components/newJob/ShareToggle";
import { SweepSection } from "../components/newJob/SweepSection";
import { WhereChoice } from "../components/newJob/WhereChoice";
import { useKind, useKinds, useNodes } from "../hooks/queries";
import { useClusterChoice } from "../hooks/useClusterChoice";
import { useGpuTypes } from "../hooks/useClusters";
import { useDeviceChoice } from "../hooks/useDeviceChoice";
import { useJobFormValues } from "../hooks/useJobFormValues";
import { useJobSubmission } from "../hooks/useJobSubmission";
import { useNewJobPrefill } from "../hooks/useNewJobPrefill";
import { usePlacement } from "../hooks/usePlacement";
import { useRunAgain } from "../hooks/useRunAgain";
import { useScheduling } from "../hooks/useScheduling";
import { useSweepForm } from "../hooks/useSweepForm";
import { clusterProblem } from "../lib/clusterPlacement";
import { batchSplitError, isActive, offerValues } from "../lib/jobForm";
import { newJobBody } from "../lib/newJobBody";
import { revealedErrors } from "../lib/revealErrors";
import { allFields, type FieldValue } from "../lib/schemaForm";
import { isSchedulingError, schedulingErrors } from "../lib/scheduling";
import { shareState } from "../lib/sharing";
import { startBlocker } from "../lib/startBlocker";
import { sweepable } from "../lib/sweep/sweepForm";

/**
 * The new-job page: the kind and what the URL prefills (useNewJobPrefill), its fields read from
 * its schema, the memory estimate (for kinds that make one), where it runs (GPUDeck's nodes, or a
 * Slurm cluster: useClusterChoice), the devices (useDeviceChoice), scheduling, an optional sweep,
 * and submit (the body: lib/newJobBody).
 */
// the fields of a job on a Slurm cluster whose 422s its card shows (cluster: the "Where" card)
const CLUSTER_FIELDS = new Set(["cluster", "partition", "count", "nodes"]);

export function NewJob() {
  const prefill = useNewJobPrefill();
  const { kind } = prefill;
  const kinds = useKinds();
  const kindInfo = useKind(kind);
  // null until typed: a follow-up's name ("eval of job 1") stands in until then
  const [typedName, setName] = useState<string | null>(null);
  // the fields the user has changed, and whether "Start job" was pressed: the live estimate's
  // messages wait for them (lib/revealErrors)
  const [touched, setTouched] = useState<ReadonlySet<string>>(new Set());
  const [attempted, setAttempted] = useState(false);
  const form = useJobFormValues(prefill.waiting ? undefined : kindInfo.data, prefill.config);
  const estimatesMemory = kindInfo.data?.estimates_memory ?? false;
  const choice = useDeviceChoice();
  const { setCount, setNodes, setSelected } = choice;
  // on a Slurm cluster the count alone says how many ranks; Slurm picks the devices
  const where = useClusterChoice(choice.count);
  useRunAgain(prefill.runAgain, kind, { setName, setCount, setNodes, setSelected, setCluster: where.prefill });
  const submission = useJobSubmission();
  const scheduling = useScheduling();
  // "Sweep" (/new?sweep=1 opens it ticked): one job per combination of the values given
  const fields = useMemo(() => allFields(form.groups), [form.groups]);
  const specs = useMemo(() => new Map(fields.map((f) => [f.path, f])), [fields]);
  const sweep = useSweepForm(prefill.sweepOn, specs);
  const { stepField, steps, dependsOn } = prefill;
  const groups = useMemo(() => offerValues(form.groups, stepField, steps), [form.groups, stepField, steps]);
  const name = typedName ?? prefill.followUp?.name ?? "";
  const { setField: setSchedulingField } = scheduling;
  useEffect(() => {
    // a follow-up of a job still running waits for it: prefilled once it is known
    if (dependsOn) setSchedulingField("scheduling.depends_on", dependsOn);
  }, [dependsOn]); // eslint-disable-line react-hooks/exhaustive-deps
  const { conflict } = submission;
  const { count, strategy } = choice;
  const onCluster = where.choice;
  const worldSize = onCluster ? count : choice.worldSize;
  const nodesError = onCluster ? null : choice.nodesError;
  const clusterIssue = onCluster ? clusterProblem(onCluster, where.state.data) : null;
  const placement = usePlacement({
    kind,
    config: form.config,
    ready: form.ready,
    estimatesMemory,
    worldSize,
    deviceType: ESTIMATE_DEVICE_TYPE,
    count,
    strategy,
    refreshKey: submission.refreshKey,
  });

  // the partition's GPU types against the estimate, and the one a submit asks Slurm for
  const gpuTypes = useGpuTypes(
    onCluster?.cluster ?? "",
    onCluster?.partition ?? "",
    estimatesMemory && placement.bytesPerDevice ? placement.bytesPerDevice : null,
    { enabled: onCluster !== null },
  );

  // sharing a device by memory: what the job would reserve, and whether it could start now
  const [share, setShare] = useState(false);
  const contextReserveBytes = Math.max(0, ...(useNodes().data ?? []).map((n) => n.cuda_context_reserve_bytes ?? 0));
  const sharing = shareState({
    devices: choice.devices,
    selected: choice.selectedDevices,
    count,
    spreadNodes: choice.spreadNodes,
    estimateBytes: estimatesMemory ? placement.bytesPerDevice : null,
    contextReserveBytes,
    recommendation: placement.recommendation,
    on: share,
  });
  const sharingOn = share && sharing.disabledReason === null && !onCluster;

  const taken = useMemo(() => new Map(conflict?.busy.map((b) => [deviceKey(b), b.held_by_job_id]) ?? []), [conflict]);
  const batchField = kindInfo.data?.batch_size_field;
  const splitError = batchSplitError(form.config, batchField, worldSize);
  const shownEstimateErrors = revealedErrors(
    placement.estimateErrors,
    touched,
    attempted,
    fields.map((f) => f.path),
  );
  const errors = {
    ...shownEstimateErrors,
    ...(splitError ? { [`config.${batchField}`]: splitError } : {}),
    ...submission.errors,
    ...sweep.errors.job,
  };
  // messages the user has not been shown yet: when they are what blocks "Start job" (no estimate,
  // so no recommendation), it stays pressable and pressing it shows them; a recommendation's own
  // refusal (a count the node cannot place) still blocks it
  const unshown =
    Object.keys(placement.estimateErrors).some((key) => !(key in errors)) &&
    !placement.recommendation &&
    Boolean(placement.recommendationUnavailable);
  const canWait = scheduling.body.queue !== false;
  const sweepBlocker = sweep.on ? sweep.blocker : null;
  const blocker = onCluster
    ? (clusterIssue?.message ?? sweepBlocker)
    : (nodesError ??
      sweepBlocker ??
      // a share that fits now starts now, whatever the whole devices' recommendation says
      (sharingOn && sharing.startsNow ? null : startBlocker({ selected: choice.selectedDevices, taken, canWait, count, ...placement })));
  // a cluster job's count, nodes and partition show their messages in its card
  const clusterErrors = {
    ...(clusterIssue ? { [clusterIssue.field]: clusterIssue.message } : {}),
    ...Object.fromEntries(Object.entries(errors).filter(([k]) => CLUSTER_FIELDS.has(k))),
  };

  const onField = (path: string, value: FieldValue) => {
    form.setField(path, value);
    setTouched((before) => (before.has(`config.${path}`) ? before : new Set(before).add(`config.${path}`)));
    submission.clearError(`config.${path}`);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setAttempted(true);
    if (blocker || !scheduling.valid) return; // the scheduling message is beside its field
    const body = newJobBody({
      kind,
      config: form.config,
      devices: choice.selectedDevices,
      count,
      nodes: choice.spreadNodes,
      name,
      scheduling: scheduling.body,
      cluster: onCluster,
      share: sharingOn,
    });
    if (sweep.on) sweep.submit(body);
    else submission.submit(body);
  };
  const pending = submission.pending || sweep.pending;
  const topErrors = Object.entries(errors).filter(
    ([k]) => !k.startsWith("config") && k !== "name" && !isSchedulingError(k) && !(onCluster && CLUSTER_FIELDS.has(k)),
  );

  return (
    <form className="page new-job" onSubmit={submit} noValidate>
      <PageHeader title="New job" />
      <div className="new-job-grid">
        <div className="card">
          <JobIdentity kind={kind} kinds={kinds.data} onKind={prefill.setKind} name={name} onName={setName} nameError={errors["name"]} />
          <PrefillNotes prefill={prefill} />
          {kindInfo.error ? (
            <p className="banner error" data-testid="kind-error">
              No form for kind {kind}: {kindInfo.error.message}
            </p>
          ) : form.ready ? (
            <JobForm groups={groups} values={form.values} onChange={onField} errors={errors} />
          ) : (
            <p className="muted">loading the {kind} form…</p>
          )}
        </div>
        <div className="side">
          {estimatesMemory && (
            <EstimatePanel
              estimate={placement.estimate}
              error={placement.estimateError}
              fieldsInvalid={Object.keys(placement.estimateErrors).length > 0}
              freeBytes={onCluster ? null : choice.freeBytes}
              unfinished={unshown}
            />
          )}
          <WhereChoice
            clusters={where.clusters}
            value={where.cluster?.name ?? null}
            onChange={(next) => {
              where.choose(next);
              submission.clearError("cluster");
            }}
            error={onCluster ? errors["cluster"] : undefined}
          />
          {where.cluster && onCluster ? (
            <ClusterPicker
              cluster={where.cluster}
              partition={onCluster.partition}
              onPartition={(next) => {
                where.setPartition(next);
                submission.clearError("partition");
              }}
              count={count}
              onCount={(next) => {
                setCount(next);
                submission.clearError("count");
              }}
              nodes={where.nodes}
              onNodes={(next) => {
                where.setNodes(next);
                submission.clearError("nodes");
              }}
              state={where.state}
              gpuTypes={gpuTypes}
              errors={clusterErrors}
            />
          ) : (
            <DevicePicker
              devices={choice.devices}
              selected={choice.selected}
              onSelect={setSelected}
              onUseRecommended={(next) => {
                setSelected(next);
                submission.clearConflict();
              }}
              count={count}
              onCount={setCount}
              nodes={choice.nodes}
              onNodes={setNodes}
              labNodes={choice.labNodes}
              nodesError={nodesError}
              strategy={strategy}
              onStrategy={choice.setStrategy}
              recommendation={placement.recommendation}
              recommendationError={placement.recommendationError}
              recommendationUnavailable={placement.recommendationUnavailable}
              bytesPerDevice={placement.bytesPerDevice}
              taken={taken}
              canWait={canWait}
            />
          )}
          {!onCluster && <ShareToggle on={share} onChange={setShare} state={sharing} contextReserveBytes={contextReserveBytes} />}
          <Scheduling
            values={scheduling.values}
            onChange={scheduling.setField}
            errors={{ ...schedulingErrors(submission.errors), ...scheduling.errors }}
          />
          <SweepSection sweep={sweep} fields={fields.filter((f) => sweepable(f) && isActive(f, form.values))} />
          {conflict && <Conflict detail={conflict} />}
          {topErrors.map(([k, msg]) => (
            <p key={k} className="field-error" role="alert">
              {k}: {msg}
            </p>
          ))}
          {submission.otherError && <p className="banner error">{submission.otherError}</p>}
          {sweep.otherError && <p className="banner error">{sweep.otherError}</p>}
          {blocker &&
            !unshown &&
            blocker !== placement.recommendation?.message &&
            blocker !== nodesError &&
            blocker !== sweepBlocker &&
            blocker !== clusterIssue?.message && (
              <p className="muted small" data-testid="start-blocked">
                {blocker}
              </p>
            )}
          <button type="submit" className="button primary wide" disabled={pending || (blocker !== null && !unshown)} data-testid="submit">
            {pending ? "Submitting…" : sweep.on ? `Start sweep · ${sweep.count} member${sweep.count === 1 ? "" : "s"}` : "Start job"}
          </button>
        </div>
      </div>
    </form>
  );
}
