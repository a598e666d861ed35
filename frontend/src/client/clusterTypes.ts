/** The app's names for the Slurm cluster types of the generated schema (issue 35). */
import type { components } from "./schema";

type Schemas = components["schemas"];

export type Cluster = Schemas["ClusterPublic"];
export type ClusterCreate = Schemas["ClusterCreate"];
/** A cluster as its add left it: whether Slurm confirmed its partitions, and why not. */
export type ClusterCreated = Schemas["ClusterCreated"];
/** A cluster's nodes now, or `reachable: false` with the cause. */
export type ClusterState = Schemas["ClusterState"];
export type ClusterNode = Schemas["ClusterNodePublic"];
export type GpuGres = Schemas["GpuGresPublic"];
/** A job on a Slurm cluster as the executor's last poll read it (JobPublic.slurm). */
export type SlurmView = Schemas["SlurmView"];
/** A partition's GRES types against an estimate, and the type a submit asks Slurm for. */
export type GpuTypes = Schemas["GpuTypesPublic"];
export type GpuType = Schemas["GpuTypePublic"];
