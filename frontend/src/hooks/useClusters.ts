/** The Slurm clusters (GET /api/clusters), each one's nodes now, and an admin's add and remove. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../client/api";
import type { ClusterCreate } from "../client/clusterTypes";
import type { User } from "../client/types";

export const clusterKeys = {
  all: ["clusters"] as const,
  state: (name: string) => ["clusters", name, "state"] as const,
  gpuTypes: (name: string, partition: string, estimate: number | null) => ["clusters", name, "gpu-types", partition, estimate] as const,
};

export function useClusters() {
  return useQuery({ queryKey: clusterKeys.all, queryFn: () => unwrap(api.GET("/api/clusters")) });
}

/** A cluster's nodes and GPUs in use, re-read every 10 s; the API answers within 2 s even when Slurm does not. */
export function useClusterState(name: string, { enabled = true }: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: clusterKeys.state(name),
    queryFn: () => unwrap(api.GET("/api/clusters/{name}/state", { params: { path: { name } } })),
    refetchInterval: 10000,
    enabled,
  });
}

/**
 * The partition's GPU types against the estimate per device (null: none yet), and the type a
 * submit asks Slurm for, by the submit's own rule; re-read with the cluster's state.
 */
export function useGpuTypes(name: string, partition: string, estimateBytes: number | null, { enabled = true }: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: clusterKeys.gpuTypes(name, partition, estimateBytes),
    queryFn: () =>
      unwrap(
        api.GET("/api/clusters/{name}/gpu-types", {
          params: { path: { name }, query: { partition, ...(estimateBytes !== null ? { estimate_bytes: estimateBytes } : {}) } },
        }),
      ),
    // a new estimate keeps the partition's last table up until its own answer comes
    placeholderData: (previous) => (previous?.cluster === name && previous.partition === partition ? previous : undefined),
    refetchInterval: 10000,
    enabled,
  });
}

/** The signed-in user, as AuthGate read it (the same query, from its cache). */
export function useMe() {
  return useQuery({ queryKey: ["me"], queryFn: (): Promise<User> => unwrap(api.GET("/api/auth/me")), staleTime: Infinity });
}

export function useAddCluster() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: ClusterCreate) => unwrap(api.POST("/api/clusters", { body })),
    onSuccess: () => void client.invalidateQueries({ queryKey: clusterKeys.all }),
  });
}

export function useRemoveCluster() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => unwrap(api.DELETE("/api/clusters/{name}", { params: { path: { name } } })),
    onSuccess: () => void client.invalidateQueries({ queryKey: clusterKeys.all }),
  });
}
