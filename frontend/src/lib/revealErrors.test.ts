import { describe, expect, it } from "vitest";
import { revealedErrors } from "./revealErrors";

const ONE_OF = { config: "give exactly one of entrypoint and module" };
const PATHS = ["entrypoint", "module", "args", "nproc_per_device", "d_in", "k"];

describe("the live estimate's messages wait for the user", () => {
  it("shows nothing on a form nobody has touched", () => {
    expect(revealedErrors({ ...ONE_OF, "config.nproc_per_device": "must be at least 1" }, new Set(), false, PATHS)).toEqual({});
  });
  it("shows a whole-config message once a field it names is touched, not another field", () => {
    expect(revealedErrors(ONE_OF, new Set(["config.args"]), false, PATHS)).toEqual({});
    expect(revealedErrors(ONE_OF, new Set(["config.module"]), false, PATHS)).toEqual(ONE_OF);
    expect(revealedErrors(ONE_OF, new Set(["config.entrypoint"]), false, PATHS)).toEqual(ONE_OF);
  });
  it("shows a field's message once that field is touched, and a message naming no field after any touch", () => {
    const errors = { "config.d_in": "must be at least 1", config: "something is wrong" };
    expect(revealedErrors(errors, new Set(["config.d_in"]), false, PATHS)).toEqual(errors);
    expect(revealedErrors(errors, new Set(["config.k"]), false, PATHS)).toEqual({ config: "something is wrong" });
  });
  it("shows everything once the user tries to submit", () => {
    expect(revealedErrors(ONE_OF, new Set(), true, PATHS)).toEqual(ONE_OF);
  });
  it("shows at once what the form's own choices make impossible (a count its node cannot place)", () => {
    const errors = { count: "9 devices requested but the node has 4", "config.d_in": "must be at least 1" };
    expect(revealedErrors(errors, new Set(), false, PATHS)).toEqual({ count: errors.count });
  });
});
