import { useMemo, useState } from "react";
import { Link, useParams } from "react-router-dom";
import type { Sweep as SweepData, SweepCancelled } from "../client/sweepTypes";
import { ConfirmButton } from "../components/ConfirmButton";
import { PageHeader } from "../components/PageHeader";
import { FrontierCard, type MetricOption } from "../components/sweep/FrontierCard";
import { MaxParallelControl } from "../components/sweep/MaxParallelControl";
import { MemberCurves } from "../components/sweep/MemberCurves";
import { MembersTable } from "../components/sweep/MembersTable";
import { ParameterCard } from "../components/sweep/ParameterCard";
import { useKind } from "../hooks/queries";
import { useHoldReleaseCancel } from "../hooks/useHoldReleaseCancel";
import { sweepEnded, useSweep } from "../hooks/useSweeps";
import { formatAge, formatBytes } from "../lib/format";
import { defaultCurves } from "../lib/sweep/axes";
import { memberColumns, parameterPaths } from "../lib/sweep/members";
import { CountsText } from "./Sweeps";

const cancelAnswer = (answer: unknown): answer is SweepCancelled => typeof (answer as SweepCancelled | null)?.cancelled === "number";

function Actions({ sweep }: { sweep: SweepData }) {
  const actions = useHoldReleaseCancel({ type: "sweep", id: sweep.id });
  const waiting = (sweep.counts["queued"] ?? 0) > 0;
  const busy = actions.pending !== null;
  const cancelled = actions.done?.action === "cancel" && cancelAnswer(actions.done.answer) ? actions.done.answer : null;
  return (
    <>
      {actions.error && (
        <span className="field-error" role="alert">
          {actions.error.message}
        </span>
      )}
      {cancelled && (
        <span className="muted small" role="status" data-testid="cancel-result">
          {cancelled.cancelled} waiting cancelled, {cancelled.stopping} running asked to stop after a final checkpoint
        </span>
      )}
      <button type="button" className="button small" disabled={!waiting || busy} onClick={actions.hold}>
        Hold
      </button>
      <button type="button" className="button small" disabled={!waiting || busy} onClick={actions.release}>
        Release
      </button>
      <ConfirmButton
        label="Cancel sweep"
        question={`Cancel every member of sweep #${sweep.id} that has not ended?`}
        confirmLabel="Cancel them"
        onConfirm={actions.cancel}
        disabled={sweepEnded(sweep) || busy}
        testId="cancel-sweep"
        {...actions.confirm}
      />
    </>
  );
}

/**
 * A sweep: its members (sortable, filtered by status, exported; the waiting ones with their
 * expected start), the curves of the members ticked (until the user ticks: all of a small sweep,
 * else the frontier's), two summary metrics with their Pareto frontier, and any metric against
 * any swept parameter; re-read until every member ended.
 */
export function Sweep() {
  const id = Number(useParams().id);
  const sweep = useSweep(Number.isInteger(id) && id > 0 ? id : null);
  const kind = useKind(sweep.data?.kind ?? "");
  // null: nothing ticked by hand yet, so the default curves are drawn
  const [tickedByHand, setTicked] = useState<ReadonlySet<number> | null>(null);
  const summary = useMemo<MetricOption[]>(
    () => (kind.data?.summary_metrics ?? []).map((s) => ({ name: s.metric, label: s.label })),
    [kind.data],
  );
  const curveMetrics = useMemo<MetricOption[]>(() => {
    const all = [...summary, ...(kind.data?.charts ?? []).flatMap((c) => c.series.map((s) => ({ name: s.metric, label: s.label })))];
    return all.filter((m, i) => all.findIndex((o) => o.name === m.name) === i);
  }, [summary, kind.data]);
  const paths = useMemo(() => (sweep.data ? parameterPaths(sweep.data) : []), [sweep.data]);
  const columns = useMemo(() => memberColumns(paths, summary), [paths, summary]);
  const byDefault = useMemo(() => new Set(sweep.data ? defaultCurves(sweep.data.members, summary) : []), [sweep.data, summary]);
  const ticked = tickedByHand ?? byDefault;
  if (sweep.error) return <div className="page banner error">{sweep.error.message}</div>;
  if (!sweep.data) return <div className="page muted">Loading sweep #{id}…</div>;
  const data = sweep.data;
  const onTick = (jobIds: number[], on: boolean) => {
    const next = new Set(ticked);
    for (const jobId of jobIds) {
      if (on) next.add(jobId);
      else next.delete(jobId);
    }
    setTicked(next);
  };
  return (
    <div className="page sweep-page" data-testid="sweep-page" data-ended={sweepEnded(data)}>
      <PageHeader title={`Sweep #${data.id} ${data.name}`}>
        <Actions sweep={data} />
      </PageHeader>
      <div className="card facts-line">
        <span>
          {data.members.length} {data.kind} members
        </span>
        <CountsText counts={data.counts} />
        <MaxParallelControl sweep={data} />
        {data.largest_estimate_bytes !== null && (
          <span className="muted">largest member {formatBytes(data.largest_estimate_bytes)} per device</span>
        )}
        <span className="muted" title={data.created_at}>
          {data.owner}, {formatAge(data.created_at)} ago · <Link to="/sweeps">all sweeps</Link>
        </span>
      </div>
      {kind.data && summary.length > 0 && <FrontierCard key={data.kind} sweep={data} metrics={summary} />}
      {kind.data && summary.length > 0 && paths.length > 0 && <ParameterCard sweep={data} metrics={summary} paths={paths} />}
      {kind.data && <MemberCurves sweep={data} ticked={ticked} metrics={curveMetrics} />}
      <MembersTable sweep={data} columns={columns} ticked={ticked} onTick={onTick} />
    </div>
  );
}
