import { useMemo, useState } from "react";
import type { JobKindInfo, KindConfig } from "../client/types";
import { defaultValues, toConfig, valuesFromConfig, type FormValues } from "../lib/jobForm";
import { allFields, fieldsFromSchema, type FieldGroup, type FieldValue } from "../lib/schemaForm";

export interface JobFormValues {
  /** the kind's fields, read from its config schema (empty until the kind is in) */
  groups: FieldGroup[];
  values: FormValues;
  /** the config the values make, as the API will validate it */
  config: KindConfig;
  /** false until the kind's schema and defaults are in */
  ready: boolean;
  setField: (path: string, value: FieldValue) => void;
}

/**
 * The new-job form's fields and values for one kind (GET /api/kinds/{kind_name}). The fields
 * exist only once the kind's schema and defaults are in, and start from those defaults (one
 * source of truth); what the user types is never replaced, except by choosing another kind.
 * (Fields open before the defaults once took a typed "400" steps to "2400400".) With `start`
 * (an earlier job's config, "run again"), the fields start from it instead of the defaults.
 */
export function useJobFormValues(kind: JobKindInfo | undefined, start?: KindConfig): JobFormValues {
  const groups = useMemo(() => (kind ? fieldsFromSchema(kind.config_schema, kind.defaults) : []), [kind]);
  const fields = useMemo(() => allFields(groups), [groups]);
  const initial = () => (start ? valuesFromConfig(start, fields) : defaultValues(fields));
  const [state, setState] = useState<{ kind: JobKindInfo | undefined; values: FormValues }>(() => ({ kind, values: initial() }));
  let values = state.values;
  if (state.kind !== kind && kind !== undefined && state.kind?.name !== kind.name) {
    // a kind arrived, or the user chose another one: its own fields, at its defaults
    values = initial();
    setState({ kind, values });
  }
  const config = useMemo(() => toConfig(values, fields), [values, fields]);
  const setField = (path: string, value: FieldValue) => setState((s) => ({ ...s, values: { ...s.values, [path]: value } }));
  return { groups, values, config, ready: kind !== undefined && state.kind?.name === kind.name, setField };
}
