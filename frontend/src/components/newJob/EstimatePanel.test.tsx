import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Estimate } from "../../client/types";
import { EstimatePanel } from "./EstimatePanel";

const estimate: Estimate = {
  bytes_per_device: 1024,
  peak_step_bytes: 1024,
  breakdown: [{ name: "parameters", bytes: 1024, note: "" }],
  method: "trace",
  world_size: 1,
  per_rank_batch: 64,
  dtype: "float32",
  device_type: "cuda",
  expectations: [
    { label: "expected L0", value: "learned", note: "jumprelu finds its own L0", warning: false },
    { label: "dictionary", value: "512 latents (8 x d_in)", note: "8 to 32 x d_in is usual", warning: false },
    { label: "warning", value: "trains badly", note: "JumpReLU without the TopK warm-up trained dense", warning: true },
  ],
};

describe("EstimatePanel", () => {
  it("shows a configuration known to train badly as a warning, apart from the figures", () => {
    render(<EstimatePanel estimate={estimate} error={null} fieldsInvalid={false} freeBytes={null} />);
    expect(screen.getAllByTestId("expectation")).toHaveLength(2);
    expect(screen.getByTestId("expectation-warning")).toHaveTextContent("trains badly: JumpReLU without the TopK warm-up trained dense");
    expect(screen.getByTestId("expectation-warning")).toHaveClass("banner", "warn");
  });
});
