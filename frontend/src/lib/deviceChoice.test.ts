import { describe, expect, it } from "vitest";
import { leastFreeBytes, spreadError, spreadNodes } from "./deviceChoice";

describe("deviceChoice", () => {
  it("spreads a count over nodes only on a lab of several nodes, with nothing ticked", () => {
    expect(spreadNodes(0, 2, 2)).toBe(2);
    expect(spreadNodes(0, 1, 2)).toBeNull(); // one node: nothing to spread over
    expect(spreadNodes(1, 2, 2)).toBeNull(); // ticked devices say where the job runs
    expect(spreadNodes(0, 3, 1)).toBeNull(); // one node asked for: the API's default
  });

  it("names a count that does not split evenly over its nodes", () => {
    expect(spreadError(3, 2)).toBe("3 devices do not split evenly over 2 nodes");
    expect(spreadError(4, 2)).toBeNull();
    expect(spreadError(3, null)).toBeNull();
  });

  it("takes the least free memory among the devices that report it", () => {
    expect(leastFreeBytes([{ memory_free_bytes: 8 }, { memory_free_bytes: null }, { memory_free_bytes: 5 }])).toBe(5);
    expect(leastFreeBytes([{ memory_free_bytes: null }, {}])).toBeNull();
    expect(leastFreeBytes([])).toBeNull();
  });
});
