import { screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { GpuTypes } from "../../client/clusterTypes";
import { useGpuTypes } from "../../hooks/useClusters";
import { json, renderPage, stubApi } from "../../test/render";
import { GpuTypeTable } from "./GpuTypeTable";

afterEach(() => vi.unstubAllGlobals());

const GIB = 1024 ** 3;

// partition gpu: 4 a100 (40 GiB), 2 t4 (16 GiB), 2 untyped GPUs; a 20 GiB job asks for a100
const MIXED: GpuTypes = {
  cluster: "lab",
  partition: "gpu",
  estimate_bytes: 20 * GIB,
  reachable: true,
  cause: null,
  types: [
    { type: "a100", memory_bytes: 40 * GIB, usable_bytes: 38 * GIB, count: 4, fits: true },
    { type: "t4", memory_bytes: 16 * GIB, usable_bytes: 15.2 * GIB, count: 2, fits: false },
    { type: null, memory_bytes: null, usable_bytes: null, count: 2, fits: null },
  ],
  gpu_type: "a100",
  refusal: null,
};

/** The table as the form shows it: read through the hook, from a stubbed API. */
function Shown({ estimate }: { estimate: number | null }) {
  return <GpuTypeTable types={useGpuTypes("lab", "gpu", estimate)} />;
}

/** Renders the table; the answer's handler records each query string the API was asked with. */
function show(answer: GpuTypes | (() => Response), estimate: number | null = 20 * GIB) {
  const asked: URLSearchParams[] = [];
  const api = stubApi({
    "GET /api/clusters/lab/gpu-types": (request) => {
      asked.push(new URL(request.url).searchParams);
      return typeof answer === "function" ? answer() : json(answer);
    },
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Shown estimate={estimate} />);
  return asked;
}

const rows = () =>
  screen.getAllByTestId("gpu-type").map((row) =>
    within(row)
      .getAllByRole("cell")
      .map((c) => c.textContent),
  );

describe("GpuTypeTable", () => {
  it("lists each type with its memory, usable memory, count and fit, and the type GPUDeck will request", async () => {
    const asked = show(MIXED);
    await screen.findByTestId("gpu-types");
    expect(rows()).toEqual([
      ["a100", "40.0 GiB", "38.0 GiB", "4", "✓"],
      ["t4", "16.0 GiB", "15.2 GiB", "2", "✗"],
      ["untyped", "—", "—", "2", "—"],
    ]);
    expect(screen.getByLabelText("fits")).toHaveClass("ok");
    expect(screen.getByLabelText("does not fit")).toHaveClass("bad");
    expect(screen.getByLabelText("its memory is not configured")).toBeInTheDocument();
    expect(screen.getByTestId("gpu-type-request")).toHaveTextContent("GPUDeck will request: a100 · the smallest that fits");
    expect(screen.queryByTestId("gpu-type-refused")).toBeNull();
    // the partition and the estimate, as the API takes them
    expect(Object.fromEntries(asked[0] ?? [])).toEqual({ partition: "gpu", estimate_bytes: String(20 * GIB) });
  });

  it("says any type will be requested, and why, when every type fits or there is no estimate", async () => {
    show({ ...MIXED, types: MIXED.types.slice(0, 1), gpu_type: null });
    expect(await screen.findByTestId("gpu-type-request")).toHaveTextContent("GPUDeck will request: any type · every type fits");
  });

  it("without an estimate judges no type and asks for none", async () => {
    const asked = show({ ...MIXED, estimate_bytes: null, types: MIXED.types.map((t) => ({ ...t, fits: null })), gpu_type: null }, null);
    expect(await screen.findByTestId("gpu-type-request")).toHaveTextContent("any type · no estimate yet");
    expect(screen.getAllByLabelText("no estimate yet")).toHaveLength(2);
    expect(screen.getAllByLabelText("its memory is not configured")).toHaveLength(1);
    expect(asked.every((query) => !query.has("estimate_bytes"))).toBe(true);
  });

  it("when no type fits says a submit will be refused, and why", async () => {
    const refusal =
      "needs 50.00 GiB per device: no GPU type of partition gpu fits it (a100 (40 GiB, 38.0 usable), t4 (16 GiB, 15.2 usable))";
    show({
      ...MIXED,
      estimate_bytes: 50 * GIB,
      types: MIXED.types.map((t) => ({ ...t, fits: t.memory_bytes === null ? null : false })),
      gpu_type: null,
      refusal,
    });
    const refused = await screen.findByTestId("gpu-type-refused");
    expect(refused).toHaveTextContent(`No GPU type of partition gpu fits this job: a submit will be refused. ${refusal}`);
    expect(refused).toHaveAttribute("role", "alert");
    expect(screen.queryByTestId("gpu-type-request")).toBeNull();
  });

  it("when Slurm does not answer shows the configured types, counts unknown, and any type", async () => {
    show({
      ...MIXED,
      reachable: false,
      cause: "scontrol did not answer within 1.0 s",
      types: [{ type: "a100", memory_bytes: 40 * GIB, usable_bytes: 38 * GIB, count: null, fits: true }],
      gpu_type: null,
    });
    expect(await screen.findByTestId("gpu-types-unreachable")).toHaveTextContent(
      "Slurm did not answer (scontrol did not answer within 1.0 s): the configured types are shown, their counts unknown.",
    );
    expect(rows()).toEqual([["a100", "40.0 GiB", "38.0 GiB", "?", "✓"]]);
    expect(screen.getByTestId("gpu-type-request")).toHaveTextContent("any type · Slurm did not answer");
  });

  it("says when the types could not be read at all", async () => {
    show(() => json({ detail: { field: "partition", message: "Slurm has no partition 'gpu'" } }, 422));
    expect(await screen.findByText(/GPU types could not be read/)).toHaveClass("banner", "warn");
  });
});
