import "@testing-library/jest-dom/vitest";
import { cleanup, configure } from "@testing-library/react";
import { afterEach, vi } from "vitest";

// How long findBy*/waitFor wait for a page's stubbed fetches to render. The default (1 s) is
// shorter than a busy 2-core CI machine takes to run a form's fetch -> render chain in jsdom
// while other test files run beside it; no test asserts on how fast anything renders.
configure({ asyncUtilTimeout: 5000 });

// uPlot draws on a canvas jsdom does not have: a stand-in that records what it is given.
vi.mock("uplot", () => {
  class FakePlot {
    static instances: FakePlot[] = [];
    width: number;
    height: number;
    data: unknown;
    opts: { width: number; height: number };
    constructor(opts: { width: number; height: number }, data: unknown) {
      this.opts = opts;
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
