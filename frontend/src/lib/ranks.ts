/** A job's ranks by node, nodes in node-rank order (their first rank's), ranks ascending. */
export function ranksPerNode(devices: readonly { node: string; rank: number }[]): [string, number[]][] {
  const nodes = new Map<string, number[]>();
  for (const d of [...devices].sort((x, y) => x.rank - y.rank)) nodes.set(d.node, [...(nodes.get(d.node) ?? []), d.rank]);
  return [...nodes.entries()];
}

/** The node a rank ran on, if the job's devices say. */
export function nodeOfRank(devices: readonly { node: string; rank: number }[], rank: number): string | null {
  return devices.find((d) => d.rank === rank)?.node ?? null;
}
