import { useMemo, useState } from "react";
import { useNavigate } from "react-router-dom";
import { ApiError, fieldErrors } from "../client/api";
import type { JobCreate } from "../client/types";
import type { FieldSpec } from "../lib/schemaForm";
import { sortSweepErrors, sweepBody, type SweepErrors } from "../lib/sweep/sweepForm";
import { distributionFor, emptyRow, planSweep, type SweepRow } from "../lib/sweep/sweepParameters";
import { useCreateSweep } from "./useSweeps";

const NO_ERRORS: SweepErrors = { job: {}, rows: {}, sweep: [] };

/**
 * The new-job form's sweep: on or off (/new?sweep=1 opens it on), its rows (grid, zip or
 * random), random's draws and seed, max_parallel, the member count they make, and
 * POST /api/sweeps; on success the page moves to the sweep.
 */
export function useSweepForm(initiallyOn: boolean, specs: ReadonlyMap<string, FieldSpec>) {
  const navigate = useNavigate();
  const create = useCreateSweep();
  const [on, setOn] = useState(initiallyOn);
  const [rows, setRows] = useState<SweepRow[]>([emptyRow()]);
  const [maxParallel, setMaxParallel] = useState("");
  const [draws, setDraws] = useState("8");
  const [seed, setSeed] = useState("");
  const [errors, setErrors] = useState<SweepErrors>(NO_ERRORS);
  const plan = useMemo(() => planSweep(rows, specs, draws, seed), [rows, specs, draws, seed]);

  const setRow = (i: number, row: SweepRow) => {
    const old = rows[i];
    // a field newly drawn at random starts on the distribution its kind suggests
    const fresh = old && row.mode === "random" && (old.mode !== "random" || old.path !== row.path);
    const next = fresh ? { ...row, distribution: distributionFor(specs.get(row.path)) } : row;
    setRows(rows.map((r, n) => (n === i ? next : r)));
    setErrors((e) => ({ ...e, rows: {}, sweep: [], draws: undefined, seed: undefined }));
  };
  const submit = (job: JobCreate) => {
    setErrors(NO_ERRORS);
    create.mutate(sweepBody(job, plan.parameters, maxParallel), {
      onSuccess: (sweep) => navigate(`/sweeps/${sweep.id}`),
      onError: (error) => {
        const paths = rows.map((r) => r.path).filter(Boolean);
        if (error instanceof ApiError && error.status === 422) setErrors(sortSweepErrors(fieldErrors(error.body), paths));
      },
    });
  };
  const handled = create.error instanceof ApiError && create.error.status === 422;
  return {
    on,
    setOn,
    rows,
    setRow,
    addRow: () => setRows([...rows, emptyRow()]),
    removeRow: (i: number) => setRows(rows.filter((_, n) => n !== i)),
    maxParallel,
    setMaxParallel,
    draws,
    setDraws,
    seed,
    setSeed,
    random: rows.some((r) => r.mode === "random"),
    count: plan.count,
    blocker: plan.blocker,
    /** the API's parameters as the rows stand (sent to preview the draws) */
    parameters: plan.parameters,
    submit,
    pending: create.isPending,
    /** the API's messages, and beside each row what is wrong with it as typed */
    errors: { ...errors, rows: { ...plan.rowErrors, ...errors.rows } },
    otherError: create.error && !handled ? create.error.message : null,
  };
}

export type SweepForm = ReturnType<typeof useSweepForm>;
