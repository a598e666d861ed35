import { useMemo, useState, type FormEvent } from "react";
import { Link, useNavigate } from "react-router-dom";
import { ApiError, fieldErrors, gpuBusy } from "../client/api";
import { deviceKey, type GpuBusyDetail, type JobKind, type RecommendStrategy } from "../client/types";
import { GpuSelector } from "../components/GpuSelector";
import { JobForm } from "../components/JobForm";
import { MemoryBreakdown } from "../components/MemoryBreakdown";
import { useQueryClient } from "@tanstack/react-query";
import { keys, useCreateJob, useEstimate, useRecommendation, useSaeDefaults } from "../hooks/queries";
import { useTelemetryContext } from "../hooks/TelemetryContext";
import { useDebounced } from "../hooks/useDebounced";
import { defaultValues, toConfig, valuesFromConfig, type FormValues } from "../lib/jobForm";

const KINDS: JobKind[] = ["sae"];

function Conflict({ detail }: { detail: GpuBusyDetail }) {
  return (
    <div className="banner error" role="alert" data-testid="conflict">
      <strong>Those GPUs were taken first.</strong> {detail.message}
      <ul>
        {detail.busy.map((b) => (
          <li key={deviceKey(b)}>
            GPU {b.index}
            {b.held_by_job_id !== null ? (
              <>
                {" "}is held by <Link to={`/jobs/${b.held_by_job_id}`}>job #{b.held_by_job_id}</Link>
              </>
            ) : (
              " is in use"
            )}
          </li>
        ))}
      </ul>
      Pick other devices or take the new recommendation.
    </div>
  );
}

export function NewJob() {
  const navigate = useNavigate();
  const telemetry = useTelemetryContext();
  const queryClient = useQueryClient();
  const [kind, setKind] = useState<JobKind>("sae");
  const [name, setName] = useState("");
  const [values, setValues] = useState<FormValues>(() => defaultValues());
  const [touched, setTouched] = useState(false);
  const defaults = useSaeDefaults();
  // until the user types, the form follows the API's defaults (one source of truth)
  const [adopted, setAdopted] = useState<unknown>(null);
  if (defaults.data && defaults.data !== adopted && !touched) {
    setAdopted(defaults.data);
    setValues(valuesFromConfig(defaults.data));
  }
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [count, setCount] = useState(1);
  const [strategy, setStrategy] = useState<RecommendStrategy>("packed");
  const [submitErrors, setSubmitErrors] = useState<Record<string, string>>({});
  const [conflict, setConflict] = useState<GpuBusyDetail | null>(null);
  const [refreshKey, setRefreshKey] = useState(0);
  const create = useCreateJob();

  const config = useMemo(() => toConfig(values), [values]);
  const settledConfig = useDebounced(config, 350);
  const worldSize = selected.size > 0 ? selected.size : count;
  const devices = telemetry.store.devices();
  // simulated devices run their ranks on CPU, so their jobs are estimated for CPU
  const deviceType = devices.length > 0 && devices.every((d) => d.source === "simulated") ? "cpu" : "cuda";
  const estimate = useEstimate(kind, settledConfig, worldSize, deviceType, true);
  const estimateErrors = estimate.error instanceof ApiError && estimate.error.status === 422 ? fieldErrors(estimate.error.body) : {};
  const bytesPerDevice = estimate.data && !estimate.error ? estimate.data.bytes_per_device : null;
  const recommendation = useRecommendation(bytesPerDevice, count, strategy, refreshKey);

  const taken = useMemo(() => new Map(conflict?.busy.map((b) => [deviceKey(b), b.held_by_job_id]) ?? []), [conflict]);
  const errors = { ...estimateErrors, ...submitErrors };
  const selectedFree = devices
    .filter((d) => selected.has(deviceKey(d)))
    .map((d) => d.memory_free_bytes)
    .filter((free): free is number => typeof free === "number");
  const recommended = recommendation.data?.devices ?? [];

  const onField = (path: string, value: string | boolean) => {
    setTouched(true);
    setValues((v) => ({ ...v, [path]: value }));
    setSubmitErrors((e) => {
      return Object.fromEntries(Object.entries(e).filter(([key]) => key !== `config.${path}`));
    });
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setConflict(null);
    setSubmitErrors({});
    const devicesBody = devices.filter((d) => selected.has(deviceKey(d))).map((d) => ({ node: d.node, uuid: d.uuid }));
    const body = {
      kind,
      config,
      ...(devicesBody.length > 0 ? { devices: devicesBody } : { count }),
      ...(name.trim() ? { name: name.trim() } : {}),
    };
    create.mutate(body, {
      onSuccess: (job) => navigate(`/jobs/${job.id}`),
      onError: (error) => {
        if (!(error instanceof ApiError)) return;
        const busy = error.status === 409 ? gpuBusy(error.body) : null;
        if (busy) {
          setConflict(busy);
          setRefreshKey((k) => k + 1);
          void queryClient.invalidateQueries({ queryKey: keys.gpus });
        } else if (error.status === 422) setSubmitErrors(fieldErrors(error.body));
      },
    });
  };

  const handled = create.error instanceof ApiError && (create.error.status === 422 || gpuBusy(create.error.body) !== null);
  const otherError = create.error && !handled ? create.error.message : null;
  const topErrors = Object.entries(errors).filter(([k]) => !k.startsWith("config") && k !== "name");

  return (
    <form className="page new-job" onSubmit={submit} noValidate>
      <div className="page-head">
        <h1>New job</h1>
      </div>
      <div className="new-job-grid">
        <div className="card">
          <div className="field-grid">
            <div className="field">
              <label htmlFor="f-kind">kind</label>
              <select id="f-kind" value={kind} onChange={(e) => setKind(e.target.value as JobKind)}>
                {KINDS.map((k) => (
                  <option key={k}>{k}</option>
                ))}
              </select>
              <span className="field-hint muted">sparse autoencoder (SAELens layout)</span>
            </div>
            <div className="field">
              <label htmlFor="f-name">name</label>
              <input id="f-name" value={name} placeholder="optional" onChange={(e) => setName(e.target.value)} />
              {errors["name"] && <span className="field-error">{errors["name"]}</span>}
            </div>
          </div>
          <JobForm values={values} onChange={onField} errors={errors} />
        </div>
        <div className="side">
          <section className="card">
            <h2>Memory per device</h2>
            {estimate.data && !estimate.error ? (
              <MemoryBreakdown estimate={estimate.data} freeBytes={selectedFree.length > 0 ? Math.min(...selectedFree) : null} />
            ) : estimate.error ? (
              <p className="field-error" data-testid="estimate-error">
                No estimate: {Object.keys(estimateErrors).length > 0 ? "fix the fields marked in the form." : estimate.error.message}
              </p>
            ) : (
              <p className="muted">estimating…</p>
            )}
          </section>
          <section className="card">
            <div className="section-head">
              <h2>GPUs</h2>
              <span className="muted small">{selected.size > 0 ? `${selected.size} selected` : `scheduler picks ${count}`}</span>
            </div>
            <div className="recommend">
              <label>
                count{" "}
                <input type="number" min={1} max={64} value={count} onChange={(e) => setCount(Math.max(1, Number(e.target.value) || 1))} className="narrow" aria-label="device count" />
              </label>
              <select aria-label="strategy" value={strategy} onChange={(e) => setStrategy(e.target.value as RecommendStrategy)}>
                <option value="packed">packed</option>
                <option value="spread">spread</option>
                <option value="memory">most free memory</option>
              </select>
              <button
                type="button"
                className="button"
                data-testid="use-recommended"
                disabled={recommended.length === 0}
                onClick={() => {
                  setSelected(new Set(recommended.map(deviceKey)));
                  setConflict(null);
                }}
              >
                {recommended.length > 0 ? `Use recommended: GPU ${recommended.map((d) => d.index).join(", ")}` : recommendation.isFetching ? "recommending…" : "no recommendation"}
              </button>
            </div>
            {recommendation.error && <p className="field-error">No recommendation: {recommendation.error.message}</p>}
            {recommendation.data && !recommendation.data.enough && <p className="field-error">{recommendation.data.message}</p>}
            <GpuSelector devices={devices} selected={selected} onChange={setSelected} bytesPerDevice={bytesPerDevice} excluded={recommendation.data?.excluded} taken={taken} />
          </section>
          {conflict && <Conflict detail={conflict} />}
          {topErrors.map(([k, msg]) => (
            <p key={k} className="field-error" role="alert">
              {k}: {msg}
            </p>
          ))}
          {otherError && <p className="banner error">{otherError}</p>}
          <button type="submit" className="button primary wide" disabled={create.isPending} data-testid="submit">
            {create.isPending ? "Submitting…" : "Start job"}
          </button>
        </div>
      </div>
    </form>
  );
}
