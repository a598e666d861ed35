import type { Estimate } from "../../client/types";
import { MemoryBreakdown } from "../MemoryBreakdown";

interface Props {
  estimate: Estimate | undefined;
  error: Error | null;
  /** the API named fields it could not accept: they are marked in the form */
  fieldsInvalid: boolean;
  /** the least free memory among the selected devices, if any are selected */
  freeBytes: number | null;
}

/** "Memory per device": the estimate's breakdown, or why there is none. */
export function EstimatePanel({ estimate, error, fieldsInvalid, freeBytes }: Props) {
  return (
    <section className="card">
      <h2>Memory per device</h2>
      {estimate && !error ? (
        <MemoryBreakdown estimate={estimate} freeBytes={freeBytes} />
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
