import { sizeText } from "../../lib/format";
import type { FieldSpec, FieldValue } from "../../lib/schemaForm";
import { PickList } from "./Choices";
import { ListRows, MapRows } from "./RowsField";

interface Props {
  spec: FieldSpec;
  value: FieldValue;
  error?: string;
  onChange: (path: string, value: FieldValue) => void;
  disabled?: boolean;
}

const placeholderOf = (spec: FieldSpec): string | undefined =>
  spec.required ? "required" : spec.optional ? "optional" : spec.kind === "json" ? "JSON, or text" : undefined;

/** The input for one field: a checkbox, a select, rows, or a text box (numbers typed as text). */
function Control({ spec, value, error, onChange, disabled, id, described }: Props & { id: string; described?: string }) {
  if (spec.kind === "list")
    return <ListRows spec={spec} id={id} value={value} onChange={onChange} disabled={disabled} described={described} />;
  if (spec.kind === "map")
    return <MapRows spec={spec} id={id} value={value} onChange={onChange} disabled={disabled} described={described} />;
  if (spec.kind === "bool") {
    return (
      <input
        id={id}
        name={spec.path}
        type="checkbox"
        disabled={disabled}
        checked={Boolean(value)}
        aria-describedby={described}
        onChange={(e) => onChange(spec.path, e.target.checked)}
      />
    );
  }
  if (spec.kind === "select") {
    return (
      <select
        id={id}
        name={spec.path}
        disabled={disabled}
        value={String(value)}
        aria-describedby={described}
        onChange={(e) => onChange(spec.path, e.target.value)}
      >
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
      inputMode={numeric && !spec.words && !spec.unit ? (spec.kind === "int" ? "numeric" : "decimal") : "text"}
      placeholder={placeholderOf(spec)}
      value={String(value)}
      aria-invalid={error ? true : undefined}
      aria-describedby={described}
      data-min={spec.min}
      data-max={spec.max}
      list={spec.choices ? `${id}-choices` : spec.suggestions ? `${id}-suggestions` : undefined}
      autoComplete={spec.choices || spec.suggestions ? "off" : undefined}
      onChange={(e) => onChange(spec.path, e.target.value)}
    />
  );
}

/** A bound worth reading: one past 2^53 (an int64's limit, mangled by JS) only says "any". */
const readable = (bound: number | undefined): number | undefined =>
  bound !== undefined && Math.abs(bound) < Number.MAX_SAFE_INTEGER ? bound : undefined;

const SIZE_HINT = "a size: 4 GiB, 512 MiB, or bytes";

export function boundsText(spec: FieldSpec): string | null {
  const words = spec.words?.length ? ` or ${spec.words.join(", ")}` : "";
  const [min, max] = [readable(spec.min), readable(spec.max)];
  if (spec.unit === "bytes") {
    // a size's bounds as sizes: "≥ 512 MiB", not "≥ 536870912"
    const limits = [min ? `≥ ${sizeText(min)}` : null, max !== undefined ? `≤ ${sizeText(max)}` : null];
    return [SIZE_HINT, ...limits].filter(Boolean).join(", ");
  }
  if (min === undefined && max === undefined) return words ? `a number${words}` : null;
  const each = spec.kind === "list" ? "each " : "";
  if (max === undefined) return `${each}≥ ${min}${words}`;
  if (min === undefined) return `${each}≤ ${max}${words}`;
  return `${each}${min} to ${max}${words}`;
}

const ROWS_HINT: Record<string, string> = { json: "values read as JSON (3, true, [1, 2]); anything else is text" };

/**
 * One config field with its label, the name the API and the CLI use for it when the label says
 * something else ("checkpoint every" is `checkpoint_interval`), and the API's message (or the
 * schema's hint) beneath.
 */
export function ConfigField(props: Props) {
  const { spec, error } = props;
  const id = `f-${spec.path.replace(/\./g, "-")}`;
  const apiName = spec.apiName ?? spec.path;
  const rowsHint = spec.kind === "list" || spec.kind === "map" ? ROWS_HINT[spec.item ?? ""] : undefined;
  // a union's select: the chosen variant's own description, else the field's
  const optionHint = spec.optionHints?.[String(props.value)];
  const hint = [optionHint ?? spec.hint, boundsText(spec), rowsHint].filter(Boolean).join(" · ");
  const described = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  const kindClass = spec.kind === "bool" ? "field-bool" : spec.kind === "list" || spec.kind === "map" ? "field-rows" : "";
  return (
    <div className={`field ${kindClass} ${error ? "has-error" : ""}`} data-field={spec.path}>
      <div className="field-head">
        {spec.kind === "bool" && <Control {...props} id={id} described={described} />}
        <label htmlFor={id}>{spec.label}</label>
        {spec.label !== apiName.split(".").pop() && (
          <code className="api-name muted" title="its name in the API, the CLI and error messages">
            {apiName}
          </code>
        )}
      </div>
      {spec.kind !== "bool" && <Control {...props} id={id} described={described} />}
      {spec.choices && <PickList id={`${id}-choices`} source={spec.choices} value={String(props.value)} />}
      {spec.suggestions && (
        <datalist id={`${id}-suggestions`} data-testid={`suggestions-${spec.path}`}>
          {spec.suggestions.map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
      )}
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
