import { isActive, SAE_FIELDS, type FieldSpec, type FormValues } from "../lib/jobForm";

interface Props {
  values: FormValues;
  onChange: (path: string, value: string | boolean) => void;
  /** "config.d_in" -> message, as the API said it */
  errors: Record<string, string>;
  fields?: FieldSpec[];
}

const GROUPS: { id: FieldSpec["group"][]; title: string; advanced?: boolean }[] = [
  { id: ["model"], title: "Model" },
  { id: ["training"], title: "Training" },
  { id: ["dataset", "synthetic", "file"], title: "Dataset" },
  { id: ["ddp"], title: "DDP", advanced: true },
];

function Field({ spec, value, error, onChange }: { spec: FieldSpec; value: string | boolean; error?: string; onChange: Props["onChange"] }) {
  const id = `f-${spec.path.replace(/\./g, "-")}`;
  const described = error ? `${id}-error` : spec.hint ? `${id}-hint` : undefined;
  let control;
  if (spec.kind === "bool") {
    control = <input id={id} name={spec.path} type="checkbox" checked={Boolean(value)} onChange={(e) => onChange(spec.path, e.target.checked)} />;
  } else if (spec.kind === "select") {
    control = (
      <select id={id} name={spec.path} value={String(value)} onChange={(e) => onChange(spec.path, e.target.value)}>
        {spec.options?.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  } else {
    control = (
      <input
        id={id}
        name={spec.path}
        type="text"
        inputMode={spec.kind === "text" ? "text" : "decimal"}
        value={String(value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described}
        onChange={(e) => onChange(spec.path, e.target.value)}
      />
    );
  }
  return (
    <div className={`field ${spec.kind === "bool" ? "field-bool" : ""} ${error ? "has-error" : ""}`} data-field={spec.path}>
      <label htmlFor={id}>{spec.label}</label>
      {control}
      {error ? (
        <span className="field-error" id={`${id}-error`} role="alert" data-testid={`error-${spec.path}`}>
          {error}
        </span>
      ) : spec.hint ? (
        <span className="field-hint muted" id={`${id}-hint`}>
          {spec.hint}
        </span>
      ) : null}
    </div>
  );
}

/** The kind's config fields, with the API's validation messages beside each. */
export function JobForm({ values, onChange, errors, fields = SAE_FIELDS }: Props) {
  return (
    <div className="job-form">
      {GROUPS.map((group) => {
        const members = fields.filter((f) => group.id.includes(f.group) && isActive(f, values));
        const body = (
          <div className="field-grid">
            {members.map((spec) => (
              <Field key={spec.path} spec={spec} value={values[spec.path] ?? spec.default} error={errors[`config.${spec.path}`]} onChange={onChange} />
            ))}
          </div>
        );
        const groupError = group.id.includes("dataset") ? errors["config.dataset"] : undefined;
        return group.advanced ? (
          <details key={group.title} className="form-group">
            <summary>{group.title}</summary>
            {body}
          </details>
        ) : (
          <fieldset key={group.title} className="form-group">
            <legend>{group.title}</legend>
            {body}
            {groupError && <span className="field-error">{groupError}</span>}
          </fieldset>
        );
      })}
      {errors["config"] && (
        <p className="field-error" role="alert" data-testid="error-config">
          {errors["config"]}
        </p>
      )}
    </div>
  );
}
