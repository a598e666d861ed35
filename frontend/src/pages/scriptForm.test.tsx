// The script kind's form as a new user meets it: labels in words (its API names beside them),
// memory shown and typed as a size, the code roots' .py files offered for the entry point, and
// "give exactly one of entrypoint and module" only once the user touched one or pressed Start.
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeSaeKind } from "../test/fixtures";
import kinds from "../test/kindSchemas.json";
import { renderNewJob } from "../test/newJobPage";
import { json } from "../test/render";

const SCRIPT = {
  ...makeSaeKind(),
  name: "script",
  description: "your own script",
  config_schema: kinds.script.config_schema,
  defaults: kinds.script.defaults,
  batch_size_field: null,
  steps_field: null,
  searches_batch_size: false,
  runs_user_code: true,
};
const ONE_OF = {
  detail: [{ loc: ["body", "config"], msg: "Value error, give exactly one of entrypoint and module", type: "value_error" }],
};
const CODE = [
  { value: "train.py", size_bytes: 2048, d_in: null, detail: "in /srv/code", root: "/srv/code" },
  { value: "pkg/eval.py", size_bytes: 512, d_in: null, detail: "in /srv/code", root: "/srv/code" },
];

beforeEach(() => FakeWebSocket.reset());
afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

function scriptForm() {
  return renderNewJob(
    {
      "GET /api/kinds": () => json([SCRIPT]),
      "GET /api/kinds/script": () => json(SCRIPT),
      "GET /api/choices/code_roots": () => json(CODE),
      "POST /api/estimate": () => json(ONE_OF, 422),
      "GET /api/gpus": () => json([]),
    },
    { route: "/new?kind=script" },
  );
}

describe("the script form", () => {
  it("labels its fields in words, with the API's name beside each that differs", async () => {
    scriptForm();
    const memory = await screen.findByLabelText("memory per device");
    const field = memory.closest("[data-field]") as HTMLElement;
    expect(within(field).getByTitle("its name in the API, the CLI and error messages")).toHaveTextContent("memory_per_device_bytes");
    for (const label of ["entry point", "processes per device", "interpreter", "restarts allowed"])
      expect(screen.getByLabelText(label)).toBeInTheDocument();
    const labels = [...document.querySelectorAll(".job-form label")].map((l) => l.textContent ?? "");
    expect(labels.filter((text) => text.includes("_"))).toEqual([]);
  });

  it("shows memory as a size, takes one typed with a unit, and gives the bounds as sizes", async () => {
    const api = scriptForm();
    const memory = await screen.findByLabelText("memory per device");
    expect(memory).toHaveValue("4 GiB");
    expect(memory.closest("[data-field]")).toHaveTextContent("a size: 4 GiB, 512 MiB, or bytes");
    await userEvent.click(screen.getByText(/advanced/));
    const host = screen.getByLabelText("host memory");
    expect(host.closest("[data-field]")).toHaveTextContent("≥ 512 MiB");
    await userEvent.clear(memory);
    await userEvent.type(memory, "8 GiB");
    // sent as typed: the API reads the size (kinds/script/config.read_size)
    await waitFor(() =>
      expect(api.requests.some((r) => r.path === "/api/estimate" && JSON.stringify(r.body).includes('"8 GiB"'))).toBe(true),
    );
  });

  it("lists the code roots' .py files for the entry point, naming the root", async () => {
    scriptForm();
    const entry = await screen.findByLabelText("entry point");
    const field = entry.closest("[data-field]") as HTMLElement;
    expect(await within(field).findByText("2 under the code root /srv/code: pick from the list")).toBeInTheDocument();
    const options = [...field.querySelectorAll("datalist option")].map((o) => o.getAttribute("value"));
    expect(options).toEqual(["train.py", "pkg/eval.py"]);
  });

  it("says 'give exactly one of entrypoint and module' only once one is touched or Start is pressed", async () => {
    const api = scriptForm();
    await screen.findByLabelText("entry point");
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/estimate")).toBe(true));
    expect(screen.queryByTestId("error-config")).toBeNull();
    expect(screen.queryByTestId("start-blocked")).toBeNull();
    expect(screen.queryByTestId("estimate-error")).toBeNull();
    expect(screen.getByTestId("estimate-waiting")).toHaveTextContent("No estimate until the form is filled in.");
    // nothing shown is wrong: Start can be pressed, and pressing it shows what is
    const start = screen.getByTestId("submit");
    expect(start).toBeEnabled();
    await userEvent.click(start);
    expect(await screen.findByTestId("error-config")).toHaveTextContent("give exactly one of entrypoint and module");
    expect(screen.getByTestId("estimate-error")).toHaveTextContent("No estimate: fix the fields marked in the form.");
    expect(api.requests.some((r) => r.method === "POST" && r.path === "/api/jobs")).toBe(false);
  });

  it("says it once the module is typed in, and not when another field is", async () => {
    const api = scriptForm();
    await userEvent.type(await screen.findByLabelText("processes per device"), "2");
    const asked = () => api.requests.some((r) => r.path === "/api/estimate" && JSON.stringify(r.body).includes('"nproc_per_device":12'));
    await waitFor(() => expect(asked()).toBe(true)); // the estimate of the form as typed, answered 422
    expect(screen.queryByTestId("error-config")).toBeNull();
    await userEvent.type(screen.getByLabelText("module"), "pkg");
    expect(await screen.findByTestId("error-config")).toHaveTextContent("give exactly one of entrypoint and module");
  });
});
