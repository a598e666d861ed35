import { isActive, type FormValues } from "../lib/jobForm";
import type { FieldGroup, FieldSpec, FieldValue } from "../lib/schemaForm";
import { ConfigField } from "./newJob/ConfigField";

interface Props {
  /** the kind's fields (lib/schemaForm's fieldsFromSchema) */
  groups: FieldGroup[];
  values: FormValues;
  onChange: (path: string, value: FieldValue) => void;
  /** "config.d_in" -> message, as the API said it */
  errors: Record<string, string>;
  disabled?: boolean;
}

type GroupProps = Omit<Props, "groups"> & { group: FieldGroup; fields: FieldSpec[] };

/** One object of the config: the given fields of it, and the API's message about the whole. */
function Group({ group, fields, values, onChange, errors, disabled }: GroupProps) {
  const groupError = group.path ? errors[`config.${group.path}`] : undefined;
  return (
    <fieldset className="form-group" data-group={group.path}>
      <legend>{group.label}</legend>
      {group.hint && <p className="muted small">{group.hint}</p>}
      <div className="field-grid">
        {fields.map((spec) => (
          <ConfigField
            key={spec.path}
            spec={spec}
            value={values[spec.path] ?? spec.default}
            error={errors[`config.${spec.path}`]}
            onChange={onChange}
            disabled={disabled}
          />
        ))}
      </div>
      {groupError && <span className="field-error">{groupError}</span>}
    </fieldset>
  );
}

/**
 * The kind's config fields that apply now (an architecture's own fields follow its select),
 * grouped as its schema nests them, with the API's messages beside each; the fields the kind
 * marks advanced wait, folded, under "advanced" (open by themselves when one has a message).
 */
export function JobForm({ groups, ...rest }: Props) {
  const shown = (group: FieldGroup, advanced: boolean) =>
    group.fields.filter((spec) => Boolean(spec.advanced) === advanced && isActive(spec, rest.values));
  const advanced = groups.map((group) => ({ group, fields: shown(group, true) })).filter((g) => g.fields.length > 0);
  const count = advanced.reduce((n, g) => n + g.fields.length, 0);
  const hasError = advanced.some((g) => g.fields.some((spec) => rest.errors[`config.${spec.path}`] !== undefined));
  return (
    <div className="job-form">
      {groups.map((group) => {
        const fields = shown(group, false);
        return fields.length > 0 ? <Group key={group.path || "config"} group={group} fields={fields} {...rest} /> : null;
      })}
      {count > 0 && (
        // keyed by hasError: a new message opens it, and the user may fold it again
        <details className="form-group advanced" open={hasError || undefined} key={String(hasError)} data-testid="advanced">
          <summary>
            advanced · {count} setting{count === 1 ? "" : "s"} most runs leave alone
          </summary>
          {advanced.map(({ group, fields }) => (
            <Group key={group.path || "config"} group={group} fields={fields} {...rest} />
          ))}
        </details>
      )}
      {rest.errors["config"] && (
        <p className="field-error" role="alert" data-testid="error-config">
          {rest.errors["config"]}
        </p>
      )}
    </div>
  );
}
