import type { ShareState } from "../../lib/sharing";
import { formatBytes } from "../../lib/format";

interface Props {
  on: boolean;
  onChange: (on: boolean) => void;
  state: ShareState;
  /** the CUDA context reserve a share adds to the estimate */
  contextReserveBytes: number;
}

/**
 * "Share the device by memory" (sends share: "memory"): what the job would reserve on each
 * device, disabled with the reason where it cannot share, and the recommender's line on
 * sharing (it could start now by sharing, or it will wait for memory).
 */
export function ShareToggle({ on, onChange, state, contextReserveBytes }: Props) {
  const disabled = state.disabledReason !== null;
  return (
    <div className="card share-toggle" data-testid="share-toggle">
      <label className="check">
        <input
          type="checkbox"
          checked={on && !disabled}
          disabled={disabled}
          onChange={(e) => onChange(e.target.checked)}
          aria-describedby="share-what"
        />{" "}
        Share the device by memory
      </label>
      <p id="share-what" className="muted small" data-testid="share-what">
        {disabled
          ? state.disabledReason
          : `Reserves ${formatBytes(state.reserveBytes)} per device (its estimate + ${formatBytes(contextReserveBytes)} CUDA context), beside other sharing jobs.`}
      </p>
      {state.line && (
        <p className="small" data-testid="share-line">
          {state.line}
        </p>
      )}
    </div>
  );
}
