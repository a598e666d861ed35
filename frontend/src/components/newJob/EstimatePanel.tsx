import type { Estimate } from "../../client/types";
import { MemoryBreakdown } from "../MemoryBreakdown";

interface Props {
  estimate: Estimate | undefined;
  error: Error | null;
  /** the API named fields it could not accept: they are marked in the form */
  fieldsInvalid: boolean;
  /** the least free memory among the selected devices, if any are selected */
  freeBytes: number | null;
  /** the form has messages the user has not been shown yet (nothing typed): no red here either */
  unfinished?: boolean;
}

/** What the job should show, read from its config by its kind (an SAE's expected L0), and
 * warnings for configurations known to train badly, each saying what to change. */
function Expectations({ items }: { items: Estimate["expectations"] }) {
  if (!items?.length) return null;
  const facts = items.filter((e) => !e.warning);
  const warnings = items.filter((e) => e.warning);
  return (
    <>
      <dl className="facts" data-testid="expectations">
        {facts.map((e) => (
          <div key={e.label} data-testid="expectation">
            <dt>{e.label}</dt>
            <dd title={e.note}>{e.value}</dd>
            {e.note && <dd className="muted small">{e.note}</dd>}
          </div>
        ))}
      </dl>
      {warnings.map((e) => (
        <p key={e.note} className="banner warn" role="status" data-testid="expectation-warning">
          {e.value}: {e.note}
        </p>
      ))}
    </>
  );
}

/** "Memory per device": the estimate's breakdown, or why there is none; then what the job
 * should show (its kind's expectations). */
export function EstimatePanel({ estimate, error, fieldsInvalid, freeBytes, unfinished = false }: Props) {
  return (
    <section className="card">
      <h2>Memory per device</h2>
      {estimate && !error ? (
        <>
          <MemoryBreakdown estimate={estimate} freeBytes={freeBytes} />
          <Expectations items={estimate.expectations} />
        </>
      ) : error && unfinished ? (
        <p className="muted" data-testid="estimate-waiting">
          No estimate until the form is filled in.
        </p>
      ) : error ? (
        <p className="field-error" data-testid="estimate-error">
          No estimate: {fieldsInvalid ? "fix the fields marked in the form." : error.message}
        </p>
      ) : (
        <p className="muted">estimating…</p>
      )}
    </section>
  );
}
