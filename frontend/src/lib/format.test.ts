import { describe, expect, it } from "vitest";
import { formatAge, formatBytes, formatCompact, formatMetric, formatNumber, loadLevel } from "./format";

describe("format", () => {
  it("writes bytes in binary units", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(80 * 1024 ** 3)).toBe("80.0 GiB");
    expect(formatBytes(null)).toBe("—");
  });

  it("writes ages relative to now", () => {
    const now = Date.parse("2026-01-01T01:00:00Z");
    expect(formatAge("2026-01-01T00:59:30Z", now)).toBe("30s");
    expect(formatAge("2026-01-01T00:55:00Z", now)).toBe("5m");
    expect(formatAge("2025-12-30T01:00:00Z", now)).toBe("2d");
  });

  it("shows missing readings as a dash", () => {
    expect(formatNumber(null, 0, "%")).toBe("—");
    expect(formatNumber(41.6, 0, "%")).toBe("42%");
    expect(formatCompact(2_500_000)).toBe("2.5M");
  });

  it("grades load", () => {
    expect(loadLevel(0.2)).toBe("low");
    expect(loadLevel(0.7)).toBe("mid");
    expect(loadLevel(0.9)).toBe("high");
  });
});

describe("formatMetric", () => {
  it("shows percents with at most one decimal and counts as whole numbers", () => {
    expect(formatMetric("heldout_dead_pct", 0)).toBe("0");
    expect(formatMetric("dead_pct", 12.345)).toBe("12.3");
    expect(formatMetric("dead_features", 0)).toBe("0");
    expect(formatMetric("dead_features", 37)).toBe("37");
    expect(formatMetric("rows", 16384)).toBe("16.4k");
    expect(formatMetric("explained_variance", 0.5806)).toBe("0.581");
    expect(formatMetric("loss", null)).toBe("—");
  });
});
