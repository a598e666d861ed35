import { useState } from "react";
import { SCHEDULING_FIELDS, type SchedulingValues } from "../../lib/scheduling";
import { ConfigField } from "./ConfigField";

interface Props {
  values: SchedulingValues;
  onChange: (path: string, value: string | boolean) => void;
  /** "scheduling.time_limit" -> message: the form's own reading, or the API's 422 */
  errors: Record<string, string>;
}

const [QUEUE, ...MORE] = SCHEDULING_FIELDS;

/**
 * How the job waits for its devices, drawn with the kind form's field specs and inputs
 * (lib/scheduling): "queue if busy" always shows; priority, time limit, dependencies,
 * preemptible and held open on demand (or by themselves when one has a message or a value), which keeps the
 * form short for the common case.
 */
export function Scheduling({ values, onChange, errors }: Props) {
  const [open, setOpen] = useState(false);
  // open by itself when a field has a message, or a value set for the user (a follow-up's
  // "depends on"), so nothing the job will be submitted with is hidden
  const shown = open || MORE.some((spec) => errors[spec.path] !== undefined || (values[spec.path] ?? spec.default) !== spec.default);
  const field = (spec: (typeof SCHEDULING_FIELDS)[number]) => (
    <ConfigField
      key={spec.path}
      spec={spec}
      value={values[spec.path] ?? spec.default}
      error={errors[spec.path]}
      onChange={(path, value) => (typeof value === "string" || typeof value === "boolean") && onChange(path, value)}
    />
  );
  return (
    <fieldset className="form-group scheduling" data-group="scheduling">
      <legend>Scheduling</legend>
      <div className="field-grid">
        {QUEUE && field(QUEUE)}
        {shown && MORE.map(field)}
      </div>
      <button type="button" className="link-button small" aria-expanded={shown} onClick={() => setOpen(!shown)}>
        {shown ? "fewer scheduling options" : "priority, time limit, dependencies…"}
      </button>
    </fieldset>
  );
}
