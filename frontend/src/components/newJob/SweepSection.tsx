import type { SweepForm } from "../../hooks/useSweepForm";
import { useSweepDraws } from "../../hooks/useSweeps";
import { paramText } from "../../lib/sweep/members";
import type { FieldSpec } from "../../lib/schemaForm";
import { ConfigField } from "./ConfigField";
import { SweepRowFields } from "./SweepRowFields";

// drawn with the kind form's field specs and inputs, as the Scheduling section is
const ON: FieldSpec = {
  path: "sweep.on",
  apiName: "sweep",
  label: "sweep",
  kind: "bool",
  default: false,
  hint: "one job per member: every combination of the rows below, rows in step advanced together, random rows drawn (POST /api/sweeps)",
};
const DRAWS: FieldSpec = {
  path: "sweep.draws",
  apiName: "count",
  label: "draws",
  kind: "int",
  default: "",
  min: 1,
  max: 1000,
  hint: "members drawn at random, for each combination of the other rows",
};
const SEED: FieldSpec = {
  path: "sweep.seed",
  apiName: "seed",
  label: "draw seed",
  kind: "int",
  default: "",
  optional: true,
  min: 0,
  hint: "the same seed draws the same values; empty: 0",
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

const PREVIEWED = 8;

/** The first draws a random sweep would make, as the sweep will (the API's own seeded draws), before launch. */
function DrawsPreview({ sweep }: { sweep: SweepForm }) {
  const ready = sweep.random && sweep.count > 0;
  const draws = useSweepDraws(sweep.parameters, ready);
  if (!ready || !draws.data) return null;
  const paths = Object.keys(sweep.parameters.random ?? {});
  const shown = draws.data.members.slice(0, PREVIEWED);
  return (
    <div className="small muted" data-testid="sweep-draws">
      {paths.map((path) => (
        <p key={path} data-testid="sweep-draws-row" data-path={path}>
          {path} drawn: {shown.map((m) => paramText(m[path])).join(", ")}
          {draws.data.count > PREVIEWED ? `, … (${draws.data.count - PREVIEWED} more)` : ""}
        </p>
      ))}
    </div>
  );
}

interface Props {
  sweep: SweepForm;
  /** the fields a sweep may vary (those that apply now, one value each) */
  fields: FieldSpec[];
}

/**
 * "Sweep": ticked, the form starts one job per member instead of one job: every combination of
 * the rows (each a config field and its values, or how to draw them), at most max_parallel at
 * once.
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
            <SweepRowFields
              key={i}
              n={i + 1}
              row={row}
              fields={fields}
              error={errors.rows[row.path]}
              onChange={(next) => sweep.setRow(i, next)}
              onRemove={sweep.rows.length > 1 ? () => sweep.removeRow(i) : undefined}
            />
          ))}
          <button type="button" className="link-button small" onClick={sweep.addRow}>
            + add a field
          </button>
          {sweep.random && (
            <>
              <ConfigField spec={DRAWS} value={sweep.draws} error={errors.draws} onChange={(_, value) => sweep.setDraws(String(value))} />
              <ConfigField spec={SEED} value={sweep.seed} error={errors.seed} onChange={(_, value) => sweep.setSeed(String(value))} />
            </>
          )}
          <ConfigField
            spec={MAX_PARALLEL}
            value={sweep.maxParallel}
            error={errors.maxParallel}
            onChange={(_, value) => sweep.setMaxParallel(String(value))}
          />
          <p className="small" data-testid="sweep-count">
            {sweep.count === 0 ? sweep.blocker : `${sweep.count} member${sweep.count === 1 ? "" : "s"}`}
          </p>
          <DrawsPreview sweep={sweep} />
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
