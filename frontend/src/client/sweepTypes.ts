/** The app's names for the sweep types of the generated schema (issue 27). */
import type { components } from "./schema";

type Schemas = components["schemas"];

export type Sweep = Schemas["SweepPublic"];
export type SweepSummary = Schemas["SweepSummary"];
export type SweepMember = Schemas["SweepMember"];
export type SweepCreate = Schemas["SweepCreate"];
export type SweepParameters = Schemas["SweepParameters"];
