import { isActive, type FormValues } from "../lib/jobForm";
import type { FieldGroup } from "../lib/schemaForm";
import { ConfigField } from "./newJob/ConfigField";

interface Props {
  /** the kind's fields (lib/schemaForm's fieldsFromSchema) */
  groups: FieldGroup[];
  values: FormValues;
  onChange: (path: string, value: string | boolean) => void;
  /** "config.d_in" -> message, as the API said it */
  errors: Record<string, string>;
  disabled?: boolean;
}

/** One object of the config: its fields that apply now, and the API's message about the whole. */
function Group({ group, values, onChange, errors, disabled }: Omit<Props, "groups"> & { group: FieldGroup }) {
  const groupError = group.path ? errors[`config.${group.path}`] : undefined;
  return (
    <fieldset className="form-group" data-group={group.path}>
      <legend>{group.label}</legend>
      {group.hint && <p className="muted small">{group.hint}</p>}
      <div className="field-grid">
        {group.fields
          .filter((spec) => isActive(spec, values))
          .map((spec) => (
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

/** The kind's config fields, grouped as its schema nests them, with the API's messages beside each. */
export function JobForm({ groups, ...rest }: Props) {
  return (
    <div className="job-form">
      {groups.map((group) => (
        <Group key={group.path || "config"} group={group} {...rest} />
      ))}
      {rest.errors["config"] && (
        <p className="field-error" role="alert" data-testid="error-config">
          {rest.errors["config"]}
        </p>
      )}
    </div>
  );
}
