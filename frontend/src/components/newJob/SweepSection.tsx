import type { SweepForm } from "../../hooks/useSweepForm";
import type { FieldSpec } from "../../lib/schemaForm";
import { ConfigField } from "./ConfigField";

// drawn with the kind form's field specs and inputs, as the Scheduling section is
const ON: FieldSpec = {
  path: "sweep.on",
  apiName: "sweep",
  label: "sweep",
  kind: "bool",
  default: false,
  hint: "one job for each combination of the values given below (POST /api/sweeps)",
};
const MAX_PARALLEL: FieldSpec = {
  path: "sweep.max_parallel",
  apiName: "max_parallel",
  label: "max parallel",
  kind: "int",
  default: "",
  optional: true,
  min: 1,
  max: 1024,
  hint: "at most this many members run at once; empty: no limit",
};

interface Props {
  sweep: SweepForm;
  /** the fields a sweep may vary (those that apply now, one value each) */
  fields: FieldSpec[];
}

/**
 * "Sweep": ticked, the form starts one job per combination of the values given here (each
 * row a config field and its values), at most max_parallel at once, instead of one job.
 */
export function SweepSection({ sweep, fields }: Props) {
  const { errors } = sweep;
  return (
    <fieldset className="form-group sweep-section" data-group="sweep">
      <legend>Sweep</legend>
      <ConfigField spec={ON} value={sweep.on} onChange={(_, value) => sweep.setOn(Boolean(value))} />
      {sweep.on && (
        <>
          {sweep.rows.map((row, i) => (
            <div className="sweep-row" key={i} data-testid="sweep-row">
              <select
                aria-label={`sweep field ${i + 1}`}
                value={row.path}
                onChange={(e) => sweep.setRow(i, { ...row, path: e.target.value })}
              >
                <option value="">choose a field…</option>
                {fields.map((f) => (
                  <option key={f.path} value={f.path}>
                    {f.label === f.path ? f.path : `${f.label} (${f.path})`}
                  </option>
                ))}
              </select>
              <input
                type="text"
                aria-label={`sweep values ${i + 1}`}
                placeholder="values: 2, 4, 8"
                value={row.text}
                aria-invalid={errors.rows[row.path] ? true : undefined}
                onChange={(e) => sweep.setRow(i, { ...row, text: e.target.value })}
              />
              {sweep.rows.length > 1 && (
                <button type="button" className="link-button small" onClick={() => sweep.removeRow(i)}>
                  remove
                </button>
              )}
              {errors.rows[row.path] && (
                <span className="field-error" role="alert" data-testid="sweep-member-error">
                  {errors.rows[row.path]}
                </span>
              )}
            </div>
          ))}
          <button type="button" className="link-button small" onClick={sweep.addRow}>
            + add a field
          </button>
          <ConfigField
            spec={MAX_PARALLEL}
            value={sweep.maxParallel}
            error={errors.maxParallel}
            onChange={(_, value) => sweep.setMaxParallel(String(value))}
          />
          <p className="small" data-testid="sweep-count">
            {sweep.count === 0 ? "Give a field and its values." : `${sweep.count} member${sweep.count === 1 ? "" : "s"}`}
          </p>
          {errors.sweep.map((msg) => (
            <p key={msg} className="field-error" role="alert" data-testid="sweep-member-error">
              {msg}
            </p>
          ))}
        </>
      )}
    </fieldset>
  );
}
