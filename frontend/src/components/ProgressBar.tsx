/** `total` null means the job has not said yet how many steps it runs. */
export function ProgressBar({ value, total, label }: { value: number; total: number | null; label?: string }) {
  const fraction = total ? Math.min(1, Math.max(0, value / total)) : 0;
  const pct = Math.round(fraction * 100);
  return (
    <div
      className="progress"
      role="progressbar"
      aria-valuemin={0}
      aria-valuemax={total ?? undefined}
      aria-valuenow={value}
      aria-label={label ?? "progress"}
    >
      <div className="progress-track">
        <div className="progress-fill" style={{ width: `${fraction * 100}%` }} />
      </div>
      <span className="progress-text">
        {value.toLocaleString()} / {total === null ? "?" : total.toLocaleString()}
        {total ? ` · ${pct}%` : ""}
      </span>
    </div>
  );
}
