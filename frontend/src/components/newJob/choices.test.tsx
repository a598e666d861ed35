// A field marked `x-choices` in a kind's schema offers what the data directory holds (issue 25:
// the activations form took the model and the input as free text, and a typo went unnoticed).
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { defaultValues, toConfig, type FormValues } from "../../lib/jobForm";
import { allFields, fieldsFromSchema, type FieldValue } from "../../lib/schemaForm";
import kinds from "../../test/kindSchemas.json";
import { json, stubApi } from "../../test/render";
import { JobForm } from "../JobForm";

afterEach(() => vi.unstubAllGlobals());

const MODELS = [
  { value: "org/llama-mini", size_bytes: 2_000_000, d_in: 128, detail: "llama · 4 layers · hidden size 128" },
  { value: "tiny-gpt2", size_bytes: 1_500_000, d_in: 64, detail: "gpt2 · 2 layers · hidden size 64" },
];
const DATASETS = [{ value: "ids.npy", size_bytes: 768, d_in: null, detail: "[5, 16] int64" }];

function Activations() {
  const groups = fieldsFromSchema(kinds.activations.config_schema, kinds.activations.defaults);
  const [values, setValues] = useState<FormValues>(() => defaultValues(allFields(groups)));
  const onChange = (path: string, value: FieldValue) => setValues((v) => ({ ...v, [path]: value }));
  return (
    <>
      <JobForm groups={groups} values={values} onChange={onChange} errors={{}} />
      <pre data-testid="config">{JSON.stringify(toConfig(values, allFields(groups)))}</pre>
    </>
  );
}

describe("a field that picks from the data directory", () => {
  it("lists the models and data files with d_in and size, says what the value is and flags a typo", async () => {
    vi.stubGlobal(
      "fetch",
      stubApi({ "GET /api/choices/models": () => json(MODELS), "GET /api/choices/datasets": () => json(DATASETS) }).fetchMock,
    );
    const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={client}>
        <Activations />
      </QueryClientProvider>,
    );
    const model = screen.getByLabelText("model", { exact: true });
    const options = () => [...(document.getElementById(model.getAttribute("list") ?? "")?.querySelectorAll("option") ?? [])];
    await waitFor(() => expect(options()).toHaveLength(2));
    expect(options().map((o) => o.getAttribute("value"))).toEqual(["org/llama-mini", "tiny-gpt2"]);
    const note = screen.getByTestId("choice-f-model-choices");
    expect(note).toHaveTextContent("2 under <data_dir>/models: pick from the list");

    await userEvent.type(model, "tiny-gtp2"); // a typo
    expect(note).toHaveTextContent("not one of the 2 under <data_dir>/models");
    expect(note).toHaveClass("warn");
    await userEvent.clear(model);
    await userEvent.type(model, "tiny-gpt2");
    expect(note).toHaveTextContent("gpt2 · 2 layers · hidden size 64 · d_in 64 · 1.4 MiB");
    expect(JSON.parse(screen.getByTestId("config").textContent ?? "{}")).toMatchObject({ model: "tiny-gpt2" });

    const input = screen.getByLabelText("input", { exact: true });
    expect(input).toHaveAttribute("list", "f-input-choices");
    await userEvent.type(input, "ids.npy");
    expect(screen.getByTestId("choice-f-input-choices")).toHaveTextContent("[5, 16] int64 · 768 B");
    // a field without the marker stays a plain text box
    expect(screen.getByLabelText("output", { exact: true })).not.toHaveAttribute("list");
  });
});
