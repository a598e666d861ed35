import { describe, expect, it } from "vitest";
import { makeSweep } from "../../test/sweepFixtures";
import { filterByStatus, memberColumns, membersCsv, membersJson, parameterPaths, paramsText, sortMembers } from "./members";

const METRICS = [
  { name: "l0", label: "L0" },
  { name: "explained_variance", label: "explained var." },
];

describe("the members table", () => {
  const sweep = makeSweep(8);
  sweep.members[3] = { ...(sweep.members[3] as (typeof sweep.members)[number]), status: "failed", metrics: {} };
  const columns = memberColumns(parameterPaths(sweep), METRICS);

  it("has the index, each parameter in the spec's order, status, progress and the kind's summary metrics", () => {
    expect(columns.map((c) => c.key)).toEqual([
      "index",
      "param:k",
      "param:lr",
      "status",
      "progress",
      "metric:l0",
      "metric:explained_variance",
    ]);
  });

  it("sorts by any column either way, a member without the figure last", () => {
    const byL0 = sortMembers(sweep.members, columns, { key: "metric:l0", descending: false });
    expect(byL0.at(-1)?.index).toBe(3);
    const l0s = byL0.slice(0, -1).map((m) => m.metrics["l0"] as number);
    expect(l0s).toEqual([...l0s].sort((a, b) => a - b));
    const down = sortMembers(sweep.members, columns, { key: "param:k", descending: true });
    expect(down.map((m) => m.params["k"])).toEqual([16, 16, 8, 8, 4, 4, 2, 2]);
    expect(sortMembers(sweep.members, columns, { key: "status", descending: false })[0]?.status).toBe("failed");
  });

  it("filters by the statuses ticked, all when none is", () => {
    expect(filterByStatus(sweep.members, new Set(["failed"])).map((m) => m.index)).toEqual([3]);
    expect(filterByStatus(sweep.members, new Set())).toHaveLength(8);
  });

  it("exports CSV with a header of API names and one row per member, and JSON with the sweep's id", () => {
    const csv = membersCsv(sweep.members.slice(0, 2), columns).trim().split("\n");
    expect(csv[0]).toBe("job_id,index,k,lr,status,progress,l0,explained_variance");
    expect(csv[1]?.startsWith("100,0,2,0.001,succeeded,1,2,")).toBe(true);
    const failed = membersCsv([sweep.members[3]!], columns).trim().split("\n")[1];
    expect(failed).toBe("103,3,16,0.001,failed,1,,");
    const json = JSON.parse(membersJson(sweep, sweep.members)) as { sweep_id: number; members: unknown[] };
    expect(json.sweep_id).toBe(2);
    expect(json.members).toHaveLength(8);
  });

  it("quotes a CSV cell holding a comma, and names a member's values as the CLI does", () => {
    const odd = { ...sweep.members[0]!, params: { tag: 'a,"b"' } };
    const cols = memberColumns(["tag"], []);
    expect(membersCsv([odd], cols).split("\n")[1]).toBe('100,0,"a,""b""",succeeded,1');
    expect(paramsText({ k: 8, lr: 0.004, act: "relu" })).toBe("k=8, lr=0.004, act=relu");
    // rounded alike everywhere: no 16 digits, no exponent beside plain decimals
    expect(paramsText({ lr: 0.004884765313390349, b: 0.00069, d_sae: 16384 })).toBe("lr=0.00488, b=0.00069, d_sae=16384");
  });
});
