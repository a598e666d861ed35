// The kind form as a user meets it: rows for lists and maps, the API's name under a label that
// says something else, a kind's fields by architecture, and the advanced ones folded.
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { defaultValues, toConfig, type FormValues } from "../lib/jobForm";
import { allFields, fieldsFromSchema, type FieldValue } from "../lib/schemaForm";
import kinds from "../test/kindSchemas.json";
import { json, renderPage, stubApi } from "../test/render";
import { JobForm } from "./JobForm";
import { ConfigField } from "./newJob/ConfigField";

function Harness({ kind, errors = {} }: { kind: keyof typeof kinds; errors?: Record<string, string> }) {
  const groups = fieldsFromSchema(kinds[kind].config_schema, kinds[kind].defaults);
  const [values, setValues] = useState<FormValues>(() => defaultValues(allFields(groups)));
  const onChange = (path: string, value: FieldValue) => setValues((v) => ({ ...v, [path]: value }));
  return (
    <>
      <JobForm groups={groups} values={values} onChange={onChange} errors={errors} />
      <pre data-testid="config">{JSON.stringify(toConfig(values, allFields(groups)))}</pre>
    </>
  );
}

afterEach(() => vi.unstubAllGlobals());

const config = () => JSON.parse(screen.getByTestId("config").textContent ?? "{}") as Record<string, unknown>;

describe("JobForm rows", () => {
  it("adds, fills and removes a script's args and env rows, and sends a list and an object", async () => {
    vi.stubGlobal("fetch", stubApi({ "GET /api/choices/code_roots": () => json([]) }).fetchMock);
    renderPage(<Harness kind="script" />);
    const args = screen.getByRole("group", { name: "arguments" });
    await userEvent.click(within(args).getByRole("button", { name: "+ add one" }));
    await userEvent.type(screen.getByLabelText("arguments 1"), "--steps");
    await userEvent.click(within(args).getByRole("button", { name: "+ add another" }));
    await userEvent.type(screen.getByLabelText("arguments 2"), "20");
    const env = screen.getByRole("group", { name: "environment variables" });
    await userEvent.click(within(env).getByRole("button", { name: "+ add one" }));
    await userEvent.type(screen.getByLabelText("environment variables 1 name"), "SEED");
    await userEvent.type(screen.getByLabelText("environment variables 1 value"), "3");
    expect(config()).toMatchObject({ args: ["--steps", "20"], env: { SEED: "3" } });
    await userEvent.click(within(args).getAllByRole("button", { name: "remove" })[0]!);
    expect(config()).toMatchObject({ args: ["20"] });
  });
});

describe("JobForm labels and applicability", () => {
  it("shows the API's name under a label that differs from it, and no name where they agree", () => {
    render(<Harness kind="sae" />);
    const field = screen.getByLabelText("checkpoint every").closest(".field")!;
    expect(field).toHaveTextContent("checkpoint_interval");
    expect(screen.getByLabelText("steps", { selector: "input" }).closest(".field")!.querySelector(".api-name")).toBeNull();
  });

  it("shows an architecture's own fields, and folds the advanced ones", async () => {
    render(<Harness kind="sae" />);
    expect(screen.queryByLabelText("L1 coefficient")).toBeNull();
    expect(screen.getByLabelText("k")).toBeVisible();
    await userEvent.selectOptions(screen.getByLabelText("architecture"), "standard");
    expect(screen.getByLabelText("L1 coefficient")).toBeVisible();
    expect(screen.queryByLabelText("k")).toBeNull();
    const advanced = screen.getByTestId("advanced");
    expect(advanced).not.toHaveAttribute("open");
    expect(within(advanced).getByLabelText("adam_beta1")).toBeInTheDocument();
    expect(config()).not.toHaveProperty("k");
  });

  it("opens the advanced section by itself when one of its fields has a message", () => {
    render(<Harness kind="sae" errors={{ "config.adam_beta1": "Input should be less than 1" }} />);
    expect(screen.getByTestId("advanced")).toHaveAttribute("open");
  });
});

describe("JobForm bounds", () => {
  it("says a field's bounds, but not an int64's (past 2^53 they only mean 'any')", () => {
    render(<Harness kind="sae_eval" />);
    const hint = (path: string) => document.querySelector(`[data-field="${path}"] .field-hint`)?.textContent ?? "";
    expect(hint("batch_size")).toContain("1 to 1048576");
    expect(hint("source_job")).toMatch(/≥ 1$/);
    expect(hint("step")).toMatch(/≥ 0$/);
  });

  it("labels a union's select by its property, not the group's heading again", () => {
    render(<Harness kind="sae_eval" />);
    const rows = document.querySelector('[data-group="dataset"]') as HTMLElement;
    expect(rows.querySelector("legend")).toHaveTextContent("rows");
    expect(within(rows).getByLabelText("type")).toHaveValue("heldout");
    expect(within(rows).queryByLabelText("rows")).toBeNull();
  });
  it("hints a union's select with the chosen variant's description", () => {
    const groups = fieldsFromSchema(kinds.sae_eval.config_schema, kinds.sae_eval.defaults);
    const spec = allFields(groups).find((f) => f.path === "loss_recovered.type");
    if (!spec) throw new Error("no loss_recovered.type");
    const { rerender } = render(<ConfigField spec={spec} value="off" onChange={() => {}} />);
    expect(screen.getByLabelText("type")).toHaveAccessibleDescription("No language model: the SAE is scored on activation rows only.");
    rerender(<ConfigField spec={spec} value="lm" onChange={() => {}} />);
    expect(screen.getByLabelText("type")).toHaveAccessibleDescription(
      /^The language model run three ways: clean, with the SAE spliced in at the hook/,
    );
  });
});
