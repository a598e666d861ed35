import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach, vi } from "vitest";

// uPlot draws on a canvas jsdom does not have: a stand-in that records what it is given.
vi.mock("uplot", () => {
  class FakePlot {
    static instances: FakePlot[] = [];
    width: number;
    height: number;
    data: unknown;
    constructor(opts: { width: number; height: number }, data: unknown) {
      this.width = opts.width;
      this.height = opts.height;
      this.data = data;
      FakePlot.instances.push(this);
    }
    setData(data: unknown) {
      this.data = data;
    }
    setScale() {}
    setSize(size: { width: number; height: number }) {
      this.width = size.width;
      this.height = size.height;
    }
    destroy() {}
  }
  return { default: FakePlot };
});

afterEach(() => {
  cleanup();
  localStorage.clear();
});
