import { createContext, useContext, useEffect, type ReactNode } from "react";
import { useGpus } from "./queries";
import { useTelemetry, type Telemetry, type TelemetryOptions } from "./useTelemetry";

const TelemetryContext = createContext<Telemetry | null>(null);

/**
 * One telemetry socket for the whole app, so history survives moving between pages; GET
 * /api/gpus adds what samples do not carry (holder jobs), polled every few seconds.
 */
export function TelemetryProvider({ children, options }: { children: ReactNode; options?: TelemetryOptions }) {
  const telemetry = useTelemetry(options);
  const gpus = useGpus();
  const { store } = telemetry;
  useEffect(() => {
    if (gpus.data) store.setInventory(gpus.data);
  }, [gpus.data, store]);
  return <TelemetryContext.Provider value={telemetry}>{children}</TelemetryContext.Provider>;
}

export function useTelemetryContext(): Telemetry {
  const telemetry = useContext(TelemetryContext);
  if (!telemetry) throw new Error("useTelemetryContext needs a <TelemetryProvider>");
  return telemetry;
}
