/**
 * The nodes a count is spread over (`nodes` in the API), or null: only while no device is
 * ticked (ticked devices say where the job runs), and only on a lab of several nodes (the
 * picker offers the choice there alone).
 */
export function spreadNodes(tickedCount: number, labNodes: number, nodes: number): number | null {
  return tickedCount === 0 && labNodes > 1 && nodes > 1 ? nodes : null;
}

/** Why `count` devices cannot be spread over `nodes`, or null. */
export function spreadError(count: number, nodes: number | null): string | null {
  return nodes !== null && count % nodes !== 0 ? `${count} devices do not split evenly over ${nodes} nodes` : null;
}

/** The least free memory among the ticked devices that report it (the estimate is per device), or null. */
export function leastFreeBytes(devices: readonly { memory_free_bytes?: number | null }[]): number | null {
  const free = devices.map((d) => d.memory_free_bytes).filter((bytes): bytes is number => typeof bytes === "number");
  return free.length > 0 ? Math.min(...free) : null;
}
