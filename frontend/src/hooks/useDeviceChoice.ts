import { useState } from "react";
import { deviceKey, type RecommendStrategy } from "../client/types";
import { leastFreeBytes, spreadError, spreadNodes } from "../lib/deviceChoice";
import { useTelemetryContext } from "./TelemetryContext";

/**
 * The new-job form's devices: the live devices (telemetry), the ones ticked, or else a count
 * (over at most `nodes` nodes) and how the recommender picks, and what follows from them: the
 * world size, the nodes a count is spread over, and the least free memory among the ticked.
 */
export function useDeviceChoice() {
  const devices = useTelemetryContext().store.devices();
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [count, setCount] = useState(1);
  const [nodes, setNodes] = useState(1);
  const [strategy, setStrategy] = useState<RecommendStrategy>("packed");
  const selectedDevices = devices.filter((d) => selected.has(deviceKey(d)));
  const labNodes = new Set(devices.map((d) => d.node)).size;
  const spread = spreadNodes(selected.size, labNodes, nodes);
  return {
    devices,
    selected,
    setSelected,
    selectedDevices,
    count,
    setCount,
    nodes,
    setNodes,
    strategy,
    setStrategy,
    labNodes,
    /** the nodes the count is spread over (sent as `nodes`), or null */
    spreadNodes: spread,
    nodesError: spreadError(count, spread),
    /** ticked devices decide the world size; none ticked, the count does */
    worldSize: selected.size > 0 ? selected.size : count,
    freeBytes: leastFreeBytes(selectedDevices),
  };
}

export type DeviceChoice = ReturnType<typeof useDeviceChoice>;
