import type { FieldSpec } from "../../lib/schemaForm";

interface Props {
  spec: FieldSpec;
  value: string | boolean;
  error?: string;
  onChange: (path: string, value: string | boolean) => void;
  disabled?: boolean;
}

/** The input for one field: a checkbox, a select, or a text box (numbers typed as text). */
function Control({ spec, value, error, onChange, disabled, id, described }: Props & { id: string; described?: string }) {
  if (spec.kind === "bool") {
    return (
      <input
        id={id}
        name={spec.path}
        type="checkbox"
        disabled={disabled}
        checked={Boolean(value)}
        onChange={(e) => onChange(spec.path, e.target.checked)}
      />
    );
  }
  if (spec.kind === "select") {
    return (
      <select id={id} name={spec.path} disabled={disabled} value={String(value)} onChange={(e) => onChange(spec.path, e.target.value)}>
        {spec.options?.map((o) => (
          <option key={o} value={o}>
            {o === "" ? "(none)" : o}
          </option>
        ))}
      </select>
    );
  }
  const numeric = spec.kind === "int" || spec.kind === "float";
  // A number is typed as text: what the user typed reaches the API, whose message then says what
  // is wrong (a number input hands over "" for "1e", and the API's default would run instead).
  // The schema's bounds are in the hint, and on the element for scripts and tests.
  return (
    <input
      id={id}
      name={spec.path}
      type="text"
      disabled={disabled}
      inputMode={numeric ? (spec.kind === "int" ? "numeric" : "decimal") : "text"}
      placeholder={spec.optional ? "optional" : undefined}
      value={String(value)}
      aria-invalid={error ? true : undefined}
      aria-describedby={described}
      data-min={spec.min}
      data-max={spec.max}
      onChange={(e) => onChange(spec.path, e.target.value)}
    />
  );
}

function boundsText(spec: FieldSpec): string | null {
  if (spec.min === undefined && spec.max === undefined) return null;
  if (spec.max === undefined) return `≥ ${spec.min}`;
  if (spec.min === undefined) return `≤ ${spec.max}`;
  return `${spec.min} to ${spec.max}`;
}

/** One config field with its label, and the API's message (or the schema's hint) beneath. */
export function ConfigField(props: Props) {
  const { spec, error } = props;
  const id = `f-${spec.path.replace(/\./g, "-")}`;
  const hint = [spec.hint, boundsText(spec)].filter(Boolean).join(" · ");
  const described = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  return (
    <div className={`field ${spec.kind === "bool" ? "field-bool" : ""} ${error ? "has-error" : ""}`} data-field={spec.path}>
      <label htmlFor={id}>{spec.label}</label>
      <Control {...props} id={id} described={described} />
      {error ? (
        <span className="field-error" id={`${id}-error`} role="alert" data-testid={`error-${spec.path}`}>
          {error}
        </span>
      ) : hint ? (
        <span className="field-hint muted" id={`${id}-hint`}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}
