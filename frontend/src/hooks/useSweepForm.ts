import { useMemo, useState } from "react";
import { useNavigate } from "react-router-dom";
import { ApiError, fieldErrors } from "../client/api";
import type { JobCreate } from "../client/types";
import type { FieldSpec } from "../lib/schemaForm";
import { gridOf, memberCount, sortSweepErrors, sweepBody, type SweepErrors, type SweepRow } from "../lib/sweep/sweepForm";
import { useCreateSweep } from "./useSweeps";

const NO_ERRORS: SweepErrors = { job: {}, rows: {}, sweep: [] };

/**
 * The new-job form's sweep: on or off (/new?sweep=1 opens it on), its rows and max_parallel,
 * the member count they make, and POST /api/sweeps; on success the page moves to the sweep.
 */
export function useSweepForm(initiallyOn: boolean, specs: ReadonlyMap<string, FieldSpec>) {
  const navigate = useNavigate();
  const create = useCreateSweep();
  const [on, setOn] = useState(initiallyOn);
  const [rows, setRows] = useState<SweepRow[]>([{ path: "", text: "" }]);
  const [maxParallel, setMaxParallel] = useState("");
  const [errors, setErrors] = useState<SweepErrors>(NO_ERRORS);
  const grid = useMemo(() => gridOf(rows, specs), [rows, specs]);
  const count = memberCount(grid);

  const setRow = (i: number, row: SweepRow) => {
    setRows(rows.map((r, n) => (n === i ? row : r)));
    setErrors((e) => ({ ...e, rows: {}, sweep: [] }));
  };
  const submit = (job: JobCreate) => {
    setErrors(NO_ERRORS);
    create.mutate(sweepBody(job, grid, maxParallel), {
      onSuccess: (sweep) => navigate(`/sweeps/${sweep.id}`),
      onError: (error) => {
        if (error instanceof ApiError && error.status === 422) setErrors(sortSweepErrors(fieldErrors(error.body), Object.keys(grid)));
      },
    });
  };
  const handled = create.error instanceof ApiError && create.error.status === 422;
  return {
    on,
    setOn,
    rows,
    setRow,
    addRow: () => setRows([...rows, { path: "", text: "" }]),
    removeRow: (i: number) => setRows(rows.filter((_, n) => n !== i)),
    maxParallel,
    setMaxParallel,
    count,
    submit,
    pending: create.isPending,
    errors,
    otherError: create.error && !handled ? create.error.message : null,
  };
}

export type SweepForm = ReturnType<typeof useSweepForm>;
