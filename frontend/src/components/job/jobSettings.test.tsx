import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { json, renderPage, stubApi } from "../../test/render";
import { JobSettings } from "./JobSettings";

afterEach(() => vi.unstubAllGlobals());

const setting = (path: string, value: unknown, def: unknown, note = "") => ({
  path,
  value,
  default: def,
  has_default: def !== undefined,
  is_default: value === def,
  note,
});

const settings = {
  job_id: 7,
  kind: "sae",
  settings: [
    setting("k", 3, 5),
    setting("lr", 0.0032802640616790657, 0.004),
    setting("lr_warm_up_steps", 0.05, 0.05, "75 steps"),
    { path: "dataset.path", value: "acts.npy", default: null, has_default: false, is_default: false, note: "" },
  ],
  sweep_id: 2,
  sweep_differences: [
    { path: "k", value: 3, base: 5 },
    { path: "lr", value: 0.0032802640616790657, base: 0.004 },
  ],
};

function render(extra: Record<string, (request: Request) => Response> = {}) {
  const api = stubApi({ "GET /api/jobs/7/settings": () => json(settings), ...extra });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<JobSettings jobId={7} />);
  return api;
}

const row = (path: string) => screen.getAllByTestId("setting").find((r) => r.dataset.path === path)!;

describe("JobSettings", () => {
  it("lists every field with its value, what it comes to, and the default marked", async () => {
    render();
    await screen.findByTestId("job-settings");
    expect(screen.getAllByTestId("setting").map((r) => r.dataset.path)).toEqual(["k", "lr", "lr_warm_up_steps", "dataset.path"]);
    expect(row("lr_warm_up_steps")).toHaveTextContent("0.05 → 75 steps");
    expect(within(row("lr_warm_up_steps")).getByTestId("setting-mark")).toHaveTextContent(/^default$/);
    expect(within(row("k")).getByTestId("setting-mark")).toHaveTextContent("default 5");
    expect(within(row("dataset.path")).getByTestId("setting-mark")).toHaveTextContent("required");
    // shown to 6 significant figures; the exact value is the cell's title
    const lr = within(row("lr")).getByTitle("0.0032802640616790657");
    expect(lr).toHaveTextContent(/^0\.00328026$/);
    expect(screen.getByTestId("sweep-differences")).toHaveTextContent(
      "Differs from sweep #2's base in k 3 (base 5), lr 0.00328026 (base 0.004).",
    );
  });

  it("hides the defaults on 'changed only'", async () => {
    render();
    await userEvent.click(await screen.findByRole("checkbox", { name: /changed only \(3 of 4 fields differ/ }));
    expect(screen.getAllByTestId("setting").map((r) => r.dataset.path)).toEqual(["k", "lr", "dataset.path"]);
  });

  it("diffs with another job: only the differing fields, one column per job, 'not set' where a config lacks one", async () => {
    const api = render({
      "GET /api/jobs/diff": () =>
        json({
          job_ids: [7, 9],
          kinds: ["sae", "sae"],
          fields: [
            { path: "k", values: [3, 8], present: [true, true] },
            { path: "dataset.path", values: ["acts.npy", null], present: [true, false] },
          ],
          same_count: 30,
        }),
    });
    const input = await screen.findByLabelText("job to diff with");
    await userEvent.type(input, "7");
    await userEvent.click(screen.getByRole("button", { name: "Diff" }));
    expect(screen.getByRole("alert")).toHaveTextContent("that is this job: give another job's number");
    await userEvent.clear(input);
    await userEvent.type(input, "#9");
    await userEvent.click(screen.getByRole("button", { name: "Diff" }));
    expect(await screen.findByTestId("settings-diff-summary")).toHaveTextContent("2 fields differ; 30 the same.");
    const rows = screen.getAllByTestId("diff-field");
    expect(rows.map((r) => r.textContent)).toEqual(["k38", "dataset.pathacts.npynot set"]);
    expect(screen.queryByRole("alert")).toBeNull();
    await waitFor(() => expect(api.requests.filter((r) => r.path === "/api/jobs/diff")).toHaveLength(1));
  });
});
