import { useEffect, useMemo, useState, type FormEvent } from "react";
import { useSearchParams } from "react-router-dom";
import { deviceKey, type RecommendStrategy } from "../client/types";
import { JobForm } from "../components/JobForm";
import { ESTIMATE_DEVICE_TYPE } from "../components/MemoryFigures";
import { Conflict } from "../components/newJob/Conflict";
import { DevicePicker } from "../components/newJob/DevicePicker";
import { EstimatePanel } from "../components/newJob/EstimatePanel";
import { JobIdentity } from "../components/newJob/JobIdentity";
import { Scheduling } from "../components/newJob/Scheduling";
import { SweepSection } from "../components/newJob/SweepSection";
import { useCheckpoints, useFollowUp, useJobById, useKind, useKinds } from "../hooks/queries";
import { useJobFormValues } from "../hooks/useJobFormValues";
import { useJobSubmission } from "../hooks/useJobSubmission";
import { runAgainNote, useRunAgain } from "../hooks/useRunAgain";
import { usePlacement } from "../hooks/usePlacement";
import { useScheduling } from "../hooks/useScheduling";
import { useSweepForm } from "../hooks/useSweepForm";
import { useTelemetryContext } from "../hooks/TelemetryContext";
import { batchSplitError, isActive, offerValues } from "../lib/jobForm";
import { allFields, type FieldValue } from "../lib/schemaForm";
import { isSchedulingError, schedulingErrors } from "../lib/scheduling";
import { startBlocker } from "../lib/startBlocker";
import { sweepable } from "../lib/sweep/sweepForm";

const DEFAULT_KIND = "sae";

/**
 * The new-job page: the kind (kept in the URL, /new?kind=linreg), its fields read from its
 * schema, the memory estimate (for kinds that make one), the devices, and submit.
 */
export function NewJob() {
  const devices = useTelemetryContext().store.devices();
  const [params, setParams] = useSearchParams();
  const kind = params.get("kind") || DEFAULT_KIND;
  const kinds = useKinds();
  const kindInfo = useKind(kind);
  // null until typed: a follow-up's name ("eval of job 1") stands in until then
  const [typedName, setName] = useState<string | null>(null);
  // "run again with these settings": /new?kind=sae&from=12 starts from job 12's config
  const fromId = Number(params.get("from")) || null;
  const source = useJobById(fromId);
  // "train an SAE on this output": /new?kind=sae&after=12 starts from job 12's follow-up
  const afterId = Number(params.get("after")) || null;
  const followUp = useFollowUp(afterId);
  const followConfig = followUp.data?.kind === kind ? followUp.data.config : undefined;
  const sourceConfig = source.data?.kind === kind ? source.data.config : followConfig;
  const waiting = (fromId !== null && source.isPending) || (afterId !== null && followUp.isPending);
  const form = useJobFormValues(waiting ? undefined : kindInfo.data, sourceConfig);
  const estimatesMemory = kindInfo.data?.estimates_memory ?? false;
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [count, setCount] = useState(1);
  const [nodes, setNodes] = useState(1);
  const [strategy, setStrategy] = useState<RecommendStrategy>("packed");
  useRunAgain(source.data, kind, { setName, setCount, setNodes, setSelected });
  const submission = useJobSubmission();
  const scheduling = useScheduling();
  // "Sweep" (/new?sweep=1 opens it ticked): one job per combination of the values given
  const fields = useMemo(() => allFields(form.groups), [form.groups]);
  const specs = useMemo(() => new Map(fields.map((f) => [f.path, f])), [fields]);
  const sweep = useSweepForm(params.get("sweep") === "1", specs);
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
  const groups = useMemo(() => offerValues(form.groups, stepField, steps), [form.groups, stepField, steps]);
  const dependsOn = followUp.data?.depends_on.join(", ") ?? "";
  const name = typedName ?? followUp.data?.name ?? "";
  const { setField: setSchedulingField } = scheduling;
  useEffect(() => {
    // a follow-up of a job still running waits for it: prefilled once it is known
    if (dependsOn) setSchedulingField("scheduling.depends_on", dependsOn);
  }, [dependsOn]); // eslint-disable-line react-hooks/exhaustive-deps
  const { conflict } = submission;
  const worldSize = selected.size > 0 ? selected.size : count;
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

  const taken = useMemo(() => new Map(conflict?.busy.map((b) => [deviceKey(b), b.held_by_job_id]) ?? []), [conflict]);
  const batchField = kindInfo.data?.batch_size_field;
  const splitError = batchSplitError(form.config, batchField, worldSize);
  const errors = {
    ...placement.estimateErrors,
    ...(splitError ? { [`config.${batchField}`]: splitError } : {}),
    ...submission.errors,
    ...sweep.errors.job,
  };
  const selectedDevices = devices.filter((d) => selected.has(deviceKey(d)));
  // A count over several nodes (`nodes` in the API): only while no device is ticked, and only
  // on a lab of several nodes (the picker offers it there alone).
  const labNodes = new Set(devices.map((d) => d.node)).size;
  const spreadNodes = selected.size === 0 && labNodes > 1 && nodes > 1 ? nodes : null;
  const nodesError =
    spreadNodes !== null && count % spreadNodes !== 0 ? `${count} devices do not split evenly over ${spreadNodes} nodes` : null;
  const canWait = scheduling.body.queue !== false;
  const sweepBlocker = sweep.on ? sweep.blocker : null;
  const blocker = nodesError ?? sweepBlocker ?? startBlocker({ selected: selectedDevices, taken, canWait, count, ...placement });
  const selectedFree = selectedDevices.map((d) => d.memory_free_bytes).filter((free): free is number => typeof free === "number");

  const onField = (path: string, value: FieldValue) => {
    form.setField(path, value);
    submission.clearError(`config.${path}`);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (blocker || !scheduling.valid) return; // the scheduling message is beside its field
    const devicesBody = selectedDevices.map((d) => ({ node: d.node, uuid: d.uuid }));
    const body = {
      kind,
      config: form.config,
      ...(devicesBody.length > 0 ? { devices: devicesBody } : { count, ...(spreadNodes !== null ? { nodes: spreadNodes } : {}) }),
      ...(name.trim() ? { name: name.trim() } : {}),
      ...scheduling.body,
    };
    if (sweep.on) sweep.submit(body);
    else submission.submit(body);
  };
  const pending = submission.pending || sweep.pending;
  const topErrors = Object.entries(errors).filter(([k]) => !k.startsWith("config") && k !== "name" && !isSchedulingError(k));

  return (
    <form className="page new-job" onSubmit={submit} noValidate>
      <div className="page-head">
        <h1>New job</h1>
      </div>
      <div className="new-job-grid">
        <div className="card">
          <JobIdentity
            kind={kind}
            kinds={kinds.data}
            onKind={(next) => setParams(next === DEFAULT_KIND ? {} : { kind: next }, { replace: true })}
            name={name}
            onName={setName}
            nameError={errors["name"]}
          />
          {source.data?.kind === kind && (
            <p className="banner" data-testid="prefilled-note">
              {runAgainNote(source.data)}
            </p>
          )}
          {followUp.data && (
            <p className="banner" data-testid="follow-up-note">
              <strong>{followUp.data.label}</strong> of job #{afterId}
              {afterJob.data ? ` ${afterJob.data.name}` : ""}
              {followUp.data.depends_on.length > 0 ? " (this job waits for it to succeed)" : ""}. {sentence(followUp.data.note)}
            </p>
          )}
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
              freeBytes={selectedFree.length > 0 ? Math.min(...selectedFree) : null}
            />
          )}
          <DevicePicker
            devices={devices}
            selected={selected}
            onSelect={setSelected}
            onUseRecommended={(next) => {
              setSelected(next);
              submission.clearConflict();
            }}
            count={count}
            onCount={setCount}
            nodes={nodes}
            onNodes={setNodes}
            labNodes={labNodes}
            nodesError={nodesError}
            strategy={strategy}
            onStrategy={setStrategy}
            recommendation={placement.recommendation}
            recommendationError={placement.recommendationError}
            recommendationUnavailable={placement.recommendationUnavailable}
            bytesPerDevice={placement.bytesPerDevice}
            taken={taken}
            canWait={canWait}
          />
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
          {blocker && blocker !== placement.recommendation?.message && blocker !== nodesError && blocker !== sweepBlocker && (
            <p className="muted small" data-testid="start-blocked">
              {blocker}
            </p>
          )}
          <button type="submit" className="button primary wide" disabled={pending || blocker !== null} data-testid="submit">
            {pending ? "Submitting…" : sweep.on ? `Start sweep · ${sweep.count} member${sweep.count === 1 ? "" : "s"}` : "Start job"}
          </button>
        </div>
      </div>
    </form>
  );
}

/** A note as a sentence: capitalised (the API's notes may start lower case). */
function sentence(note: string): string {
  return note.charAt(0).toUpperCase() + note.slice(1);
}
