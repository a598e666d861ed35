// The new-job form's sweep rows (issue 27): a field varied over every combination, in step with
// others (zip) or drawn at random; the member count follows what is typed, what is wrong is said
// beside its row before sending, and the API's 422 on a member lands on the row of its field.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { useSweepForm } from "../../hooks/useSweepForm";
import type { FieldSpec } from "../../lib/schemaForm";
import { json, renderPage, stubApi } from "../../test/render";
import { SweepSection } from "./SweepSection";

afterEach(() => vi.unstubAllGlobals());

const FIELDS: FieldSpec[] = [
  { path: "k", label: "k", kind: "int", default: "8" },
  { path: "d_sae", label: "d_sae", kind: "int", default: "64" },
  { path: "lr", label: "learning rate", kind: "float", default: "0.001" },
];
const SPECS = new Map(FIELDS.map((f) => [f.path, f]));

function Harness() {
  const sweep = useSweepForm(true, SPECS);
  return (
    <>
      <SweepSection sweep={sweep} fields={FIELDS} />
      <button type="button" disabled={Boolean(sweep.blocker)} onClick={() => sweep.submit({ kind: "sae", config: {}, count: 1 })}>
        start
      </button>
    </>
  );
}

const count = () => screen.getByTestId("sweep-count").textContent;

describe("the sweep's rows", () => {
  it("draws a field at random and advances two in step, counting the members as they are typed", async () => {
    const member422 = {
      detail: [
        {
          loc: ["body", "members[2]", "config", "lr"],
          msg: "lr 0.009 is too high for k 32 (member 2: k=32, lr=0.009)",
          type: "value_error",
        },
      ],
    };
    const { fetchMock, requests } = stubApi({
      "POST /api/sweeps": () => json(member422, 422),
      "POST /api/sweeps/draws": () => json({ count: 0, members: [] }),
    });
    vi.stubGlobal("fetch", fetchMock);
    renderPage(<Harness />);
    const user = userEvent.setup();

    await user.selectOptions(screen.getByLabelText("sweep field 1"), "lr");
    await user.selectOptions(screen.getByLabelText("sweep how 1"), "random");
    expect(screen.getByLabelText<HTMLSelectElement>("sweep distribution 1").value).toBe("log_uniform"); // a rate: over decades
    await user.selectOptions(screen.getByLabelText("sweep distribution 1"), "log_uniform");
    await user.type(screen.getByLabelText("sweep low 1"), "0");
    await user.type(screen.getByLabelText("sweep high 1"), "1e-2");
    expect(within(screen.getAllByTestId("sweep-row")[0]!).getByRole("alert").textContent).toBe("log-uniform needs low above 0");
    await user.clear(screen.getByLabelText("sweep low 1"));
    await user.type(screen.getByLabelText("sweep low 1"), "1e-4");
    expect(count()).toBe("8 members"); // draws start at 8

    await user.click(screen.getByRole("button", { name: "+ add a field" }));
    await user.selectOptions(screen.getByLabelText("sweep field 2"), "k");
    await user.selectOptions(screen.getByLabelText("sweep how 2"), "zip");
    await user.type(screen.getByLabelText("sweep values 2"), "8, 16, 32");
    await user.click(screen.getByRole("button", { name: "+ add a field" }));
    await user.selectOptions(screen.getByLabelText("sweep field 3"), "d_sae");
    await user.selectOptions(screen.getByLabelText("sweep how 3"), "zip");
    await user.type(screen.getByLabelText("sweep values 3"), "64, 128");
    const uneven = "rows in step need the same number of values: k has 3, d_sae has 2";
    expect(within(screen.getAllByTestId("sweep-row")[2]!).getByRole("alert").textContent).toBe(uneven);
    expect(count()).toBe("Fix the rows marked above (k, d_sae).");
    expect(screen.getByRole("button", { name: "start" })).toBeDisabled();
    await user.type(screen.getByLabelText("sweep values 3"), ", 256");
    await user.clear(screen.getByLabelText("draws"));
    await user.type(screen.getByLabelText("draws"), "2");
    expect(count()).toBe("6 members");

    await user.click(screen.getByRole("button", { name: "start" }));
    await waitFor(() => expect(within(screen.getAllByTestId("sweep-row")[0]!).getByRole("alert").textContent).toContain("member 2"));
    expect(requests.filter((r) => r.path === "/api/sweeps").at(-1)?.body).toMatchObject({
      parameters: {
        zip: { k: [8, 16, 32], d_sae: [64, 128, 256] },
        random: { lr: { distribution: "log_uniform", low: 0.0001, high: 0.01 } },
        count: 2,
      },
    });
  });
});

describe("a random sweep before launch", () => {
  it("previews the draws the sweep would make, asked of the API with the rows as they stand", async () => {
    const drawn = [0.00012, 0.0031, 0.0004567, 0.0087];
    const { fetchMock, requests } = stubApi({
      "POST /api/sweeps/draws": () => json({ count: 10, members: [...drawn, ...drawn, 0.001, 0.002].map((lr) => ({ lr })) }),
    });
    vi.stubGlobal("fetch", fetchMock);
    renderPage(<Harness />);
    const user = userEvent.setup();
    await user.selectOptions(screen.getByLabelText("sweep field 1"), "lr");
    await user.selectOptions(screen.getByLabelText("sweep how 1"), "random");
    expect(screen.queryByTestId("sweep-draws")).toBeNull(); // no bounds yet: nothing to draw
    await user.type(screen.getByLabelText("sweep low 1"), "1e-4");
    await user.type(screen.getByLabelText("sweep high 1"), "1e-2");
    await user.clear(screen.getByLabelText("draws"));
    await user.type(screen.getByLabelText("draws"), "10");
    const row = await screen.findByTestId("sweep-draws-row");
    await waitFor(() =>
      expect(row).toHaveTextContent("lr drawn: 0.00012, 0.0031, 0.000457, 0.0087, 0.00012, 0.0031, 0.000457, 0.0087, … (2 more)"),
    );
    const asked = requests.filter((r) => r.path === "/api/sweeps/draws").at(-1)?.body;
    expect(asked).toMatchObject({ random: { lr: { distribution: "log_uniform", low: 0.0001, high: 0.01 } }, count: 10 });
  });
});
