import type { Telemetry } from "../hooks/useTelemetry";

export function ConnectionIndicator({ telemetry }: { telemetry: Telemetry }) {
  const { connection, stale, attempts, unavailable } = telemetry;
  const state =
    unavailable !== null
      ? "unavailable"
      : connection === "open" && !stale
        ? "live"
        : connection === "open"
          ? "stale"
          : attempts > 0
            ? "reconnecting"
            : "connecting";
  const text =
    state === "unavailable"
      ? `${unavailable}; retrying`
      : state === "live"
        ? "live"
        : state === "stale"
          ? "stale: no sample for a while"
          : state === "reconnecting"
            ? `reconnecting (attempt ${attempts})`
            : "connecting";
  return (
    <span className={`conn conn-${state}`} data-testid="connection" data-state={state} role="status">
      <span className="dot" aria-hidden />
      {text}
    </span>
  );
}
