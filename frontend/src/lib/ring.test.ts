import { describe, expect, it } from "vitest";
import { Ring } from "./ring";

describe("Ring", () => {
  it("keeps the newest `capacity` values, oldest first", () => {
    const ring = new Ring(3);
    for (const v of [1, 2, 3, 4, 5]) ring.push(v);
    expect(ring.size).toBe(3);
    expect(ring.toArray()).toEqual([3, 4, 5]);
    expect(ring.at(0)).toBe(3);
    expect(ring.last()).toBe(5);
    expect(ring.at(3)).toBeUndefined();
  });

  it("fills a given array in place", () => {
    const ring = new Ring(4);
    ring.push(1);
    ring.push(2);
    const out = [9, 9, 9, 9, 9];
    expect(ring.toArray(out)).toBe(out);
    expect(out).toEqual([1, 2]);
  });

  it("refuses a capacity below one", () => {
    expect(() => new Ring(0)).toThrow(RangeError);
  });
});
