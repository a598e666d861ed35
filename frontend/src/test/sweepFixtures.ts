import type { Sweep, SweepMember } from "../client/sweepTypes";

/**
 * A finished SAE sweep over k (and lr when `n` > 4): member i has L0 near k and explained
 * variance rising with k, so the frontier runs from few latents to more variance explained.
 */
export function makeSweep(n = 4, overrides: Partial<Sweep> = {}): Sweep {
  const ks = [2, 4, 8, 16];
  const members: SweepMember[] = Array.from({ length: n }, (_, i) => {
    const k = ks[i % ks.length] as number;
    const lr = 0.001 * (1 + Math.floor(i / ks.length));
    const l0 = k + ((i * 37) % 11) / 10;
    return {
      job_id: 100 + i,
      index: i,
      params: n > ks.length ? { k, lr } : { k },
      name: `ks-${i}`,
      status: "succeeded",
      progress: { step: 60, total: 60 },
      error_summary: null,
      metrics: { overall_loss: 1 / k, l0, explained_variance: 1 - 1 / (k + ((i * 13) % 7)) },
      started_at: "2026-11-26T05:00:00Z",
      finished_at: "2026-11-26T05:01:00Z",
    };
  });
  return {
    id: 2,
    name: "ks",
    owner: "admin",
    kind: "sae",
    max_parallel: 2,
    created_at: "2026-11-26T05:00:00Z",
    spec: { parameters: { grid: n > ks.length ? { k: ks, lr: [] } : { k: ks } } },
    counts: { succeeded: n },
    largest_estimate_bytes: 1024 ** 2,
    members,
    ...overrides,
  };
}
