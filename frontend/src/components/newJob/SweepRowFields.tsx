import type { FieldSpec } from "../../lib/schemaForm";
import { DISTRIBUTIONS, type Distribution, type RowMode, type SweepRow } from "../../lib/sweep/sweepParameters";

const MODES: { value: RowMode; label: string; title: string }[] = [
  { value: "grid", label: "every combination", title: "each value with every value of the other rows (grid)" },
  { value: "zip", label: "in step", title: "the n-th value with the n-th of the other rows in step (zip): one number of values" },
  { value: "random", label: "random", title: "drawn at random, 'draws' times, seeded" },
];

interface Props {
  /** the row's number, from 1, in the controls' names */
  n: number;
  row: SweepRow;
  /** the fields a sweep may vary */
  fields: FieldSpec[];
  error?: string;
  onChange: (row: SweepRow) => void;
  onRemove?: () => void;
}

/** One sweep row: the field, how it varies, and its values (or its distribution and bounds). */
export function SweepRowFields({ n, row, fields, error, onChange, onRemove }: Props) {
  const invalid = error ? true : undefined;
  const values = (
    <input
      type="text"
      aria-label={`sweep values ${n}`}
      placeholder={row.mode === "random" ? "one of: topk, batchtopk" : "values: 2, 4, 8"}
      value={row.text}
      aria-invalid={invalid}
      onChange={(e) => onChange({ ...row, text: e.target.value })}
    />
  );
  return (
    <div className="sweep-row" data-testid="sweep-row">
      <select aria-label={`sweep field ${n}`} value={row.path} onChange={(e) => onChange({ ...row, path: e.target.value })}>
        <option value="">choose a field…</option>
        {fields.map((f) => (
          <option key={f.path} value={f.path}>
            {f.label === f.path ? f.path : `${f.label} (${f.path})`}
          </option>
        ))}
      </select>
      <select
        aria-label={`sweep how ${n}`}
        value={row.mode}
        title={MODES.find((m) => m.value === row.mode)?.title}
        onChange={(e) => onChange({ ...row, mode: e.target.value as RowMode })}
      >
        {MODES.map((m) => (
          <option key={m.value} value={m.value} title={m.title}>
            {m.label}
          </option>
        ))}
      </select>
      {row.mode !== "random" && values}
      {row.mode === "random" && (
        <>
          <select
            aria-label={`sweep distribution ${n}`}
            value={row.distribution}
            onChange={(e) => onChange({ ...row, distribution: e.target.value as Distribution })}
          >
            {DISTRIBUTIONS.map((d) => (
              <option key={d.value} value={d.value}>
                {d.label}
              </option>
            ))}
          </select>
          {row.distribution === "choice" ? (
            values
          ) : (
            <>
              <span className="muted small">from</span>
              <input
                type="text"
                inputMode="decimal"
                className="sweep-bound"
                aria-label={`sweep low ${n}`}
                placeholder="low"
                value={row.low}
                aria-invalid={invalid}
                onChange={(e) => onChange({ ...row, low: e.target.value })}
              />
              <span className="muted small">to</span>
              <input
                type="text"
                inputMode="decimal"
                className="sweep-bound"
                aria-label={`sweep high ${n}`}
                placeholder="high"
                value={row.high}
                aria-invalid={invalid}
                onChange={(e) => onChange({ ...row, high: e.target.value })}
              />
            </>
          )}
        </>
      )}
      {onRemove && (
        <button type="button" className="link-button small" onClick={onRemove}>
          remove
        </button>
      )}
      {error && (
        <span className="field-error" role="alert" data-testid="sweep-member-error">
          {error}
        </span>
      )}
    </div>
  );
}
