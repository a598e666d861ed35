/** The app's names for the sweep types of the generated schema (issue 27). */
import type { components } from "./schema";

type Schemas = components["schemas"];

export type Sweep = Schemas["SweepPublic"];
/** A sweep as its cancel left it, with how many members were cancelled and asked to stop. */
export type SweepCancelled = Schemas["SweepCancelled"];
export type SweepSummary = Schemas["SweepSummary"];
export type SweepMember = Schemas["SweepMember"];
export type SweepCreate = Schemas["SweepCreate"];
export type SweepParameters = Schemas["SweepParameters"];
