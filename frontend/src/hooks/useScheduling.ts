import { useMemo, useState } from "react";
import { defaultSchedulingValues, schedulingBody, type SchedulingValues } from "../lib/scheduling";

/** The new-job form's Scheduling values, the body fields they make, and what cannot be read. */
export function useScheduling() {
  const [values, setValues] = useState<SchedulingValues>(defaultSchedulingValues);
  const { body, errors } = useMemo(() => schedulingBody(values), [values]);
  const setField = (path: string, value: string | boolean) => setValues((v) => ({ ...v, [path]: value }));
  return { values, setField, body, errors, valid: Object.keys(errors).length === 0 };
}
