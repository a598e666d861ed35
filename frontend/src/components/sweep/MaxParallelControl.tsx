import { useState, type FormEvent } from "react";
import type { Sweep } from "../../client/sweepTypes";
import { useSetMaxParallel, maxParallelError } from "../../hooks/useSweepMaxParallel";
import { sweepEnded } from "../../hooks/useSweeps";

const limitText = (maxParallel: number | null | undefined) =>
  maxParallel ? `at most ${maxParallel} at once` : "no limit on parallel members";

/**
 * The sweep's max_parallel, and while a member has not ended, an edit that changes it live
 * (PATCH /api/sweeps/{id}): the scheduler's next pass starts more members when it rises (on a
 * Slurm cluster, the arrays' throttle is set); lowered, no running member is stopped, and none
 * starts until fewer run. A 422 or 403 is shown here, at the control.
 */
export function MaxParallelControl({ sweep }: { sweep: Sweep }) {
  const set = useSetMaxParallel(sweep.id);
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState("");
  const open = () => {
    setText(String(sweep.max_parallel ?? ""));
    set.reset();
    setEditing(true);
  };
  const save = (event: FormEvent) => {
    event.preventDefault();
    // the API judges the value (1..1024, a whole number) and names max_parallel when it refuses
    set.mutate(Number(text), { onSuccess: () => setEditing(false) });
  };
  const error = maxParallelError(set.error);
  if (!editing) {
    return (
      <span className="muted" data-testid="max-parallel">
        {limitText(sweep.max_parallel)}
        {!sweepEnded(sweep) && (
          <>
            {" "}
            <button type="button" className="button small" onClick={open} data-testid="max-parallel-edit">
              Change
            </button>
          </>
        )}
        {set.isSuccess && (
          <span className="small" role="status" data-testid="max-parallel-result">
            {" "}
            · now at most {set.data.max_parallel} at once: more members start at the next pass; lowering it stops no running member
          </span>
        )}
      </span>
    );
  }
  return (
    // noValidate: the API's own words on a bad value are shown, the same as the CLI's
    <form noValidate onSubmit={save} data-testid="max-parallel-form">
      <label>
        at most{" "}
        <input
          type="number"
          min={1}
          max={1024}
          step={1}
          value={text}
          onChange={(e) => setText(e.target.value)}
          aria-label="max parallel members"
          aria-invalid={error !== null}
          data-testid="max-parallel-input"
        />{" "}
        at once
      </label>{" "}
      <button type="submit" className="button small" disabled={set.isPending || text === ""} data-testid="max-parallel-save">
        Save
      </button>{" "}
      <button type="button" className="button small" onClick={() => setEditing(false)} disabled={set.isPending}>
        Keep
      </button>
      <span className="muted small"> More members start at the next pass; lowering it stops no running member.</span>
      {error && (
        <span className="field-error" role="alert" data-testid="max-parallel-error">
          {error}
        </span>
      )}
    </form>
  );
}
