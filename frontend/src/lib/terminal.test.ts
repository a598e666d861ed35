import { describe, expect, it } from "vitest";
import { asTerminalShows } from "./terminal";

describe("asTerminalShows", () => {
  it("keeps the last state of a tqdm bar, as a terminal does", () => {
    const bar = "load\r  0%|          | 0/3\r 33%|###       | 1/3\r100%|##########| 3/3\ndone\n";
    expect(asTerminalShows(bar)).toBe("100%|##########| 3/3\ndone\n");
  });

  it("overwrites only as far as the new text reaches, and reads \\r\\n as a line end", () => {
    expect(asTerminalShows("loading 100 files\rdone\r\nnext")).toBe("doneing 100 files\nnext");
    expect(asTerminalShows("a\r\nb\r\n")).toBe("a\nb\n");
  });

  it("leaves text without carriage returns as it is", () => {
    const text = "step 10: loss=1.5\nstep 20: loss=1.2\n";
    expect(asTerminalShows(text)).toBe(text);
  });
});
