/** The Slurm clusters (GET /api/clusters), each one's nodes now, and an admin's add and remove. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../client/api";
import type { ClusterCreate } from "../client/clusterTypes";
import type { User } from "../client/types";

export const clusterKeys = {
  all: ["clusters"] as const,
  state: (name: string) => ["clusters", name, "state"] as const,
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
