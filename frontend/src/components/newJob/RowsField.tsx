import type { FieldSpec, FieldValue, Pair } from "../../lib/schemaForm";

interface Props {
  spec: FieldSpec;
  id: string;
  value: FieldValue;
  onChange: (path: string, value: FieldValue) => void;
  disabled?: boolean;
  described?: string;
}

const placeholders: Record<string, string> = { int: "a whole number", float: "a number", json: "a JSON value or text", text: "" };

/** A list field: one value a row, each passed as typed (an argv stays an argv, never a string). */
export function ListRows({ spec, id, value, onChange, disabled, described }: Props) {
  const rows = Array.isArray(value) ? (value as string[]) : [];
  const set = (next: string[]) => onChange(spec.path, next);
  return (
    <div className="rows" id={id} role="group" aria-label={spec.label} aria-describedby={described} data-rows={spec.path}>
      {rows.map((row, i) => (
        <div className="row" key={i}>
          <input
            aria-label={`${spec.label} ${i + 1}`}
            name={`${spec.path}.${i}`}
            value={row}
            disabled={disabled}
            placeholder={placeholders[spec.item ?? "text"]}
            onChange={(e) => set(rows.map((r, j) => (j === i ? e.target.value : r)))}
          />
          <button type="button" className="link-button small" disabled={disabled} onClick={() => set(rows.filter((_, j) => j !== i))}>
            remove
          </button>
        </div>
      ))}
      <button type="button" className="link-button small" disabled={disabled} onClick={() => set([...rows, ""])}>
        + add {rows.length > 0 ? "another" : "one"}
      </button>
    </div>
  );
}

/** An object of free keys (environment, keyword arguments): one key and its value a row. */
export function MapRows({ spec, id, value, onChange, disabled, described }: Props) {
  const rows = Array.isArray(value) ? (value as Pair[]) : [];
  const set = (next: Pair[]) => onChange(spec.path, next);
  const edit = (i: number, part: 0 | 1, text: string) =>
    set(rows.map((r, j): Pair => (j !== i ? r : part === 0 ? [text, r[1]] : [r[0], text])));
  return (
    <div className="rows" id={id} role="group" aria-label={spec.label} aria-describedby={described} data-rows={spec.path}>
      {rows.map(([key, row], i) => (
        <div className="row" key={i}>
          <input
            className="row-key"
            aria-label={`${spec.label} ${i + 1} name`}
            name={`${spec.path}.${i}.key`}
            value={key}
            disabled={disabled}
            placeholder="name"
            onChange={(e) => edit(i, 0, e.target.value)}
          />
          <input
            aria-label={`${spec.label} ${i + 1} value`}
            name={`${spec.path}.${i}.value`}
            value={row}
            disabled={disabled}
            placeholder={placeholders[spec.item ?? "text"] || "value"}
            onChange={(e) => edit(i, 1, e.target.value)}
          />
          <button type="button" className="link-button small" disabled={disabled} onClick={() => set(rows.filter((_, j) => j !== i))}>
            remove
          </button>
        </div>
      ))}
      <button type="button" className="link-button small" disabled={disabled} onClick={() => set([...rows, ["", ""]])}>
        + add {rows.length > 0 ? "another" : "one"}
      </button>
    </div>
  );
}
