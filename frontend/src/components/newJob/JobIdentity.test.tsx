// A kind the server refused for its kind API version (issue 33) is in the picker, disabled, with the
// reason the API gives; asked for by a link, the reason shows under the picker instead of a form hint.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { JobKindInfo } from "../../client/types";
import { makeSaeKind } from "../../test/fixtures";
import { JobIdentity } from "./JobIdentity";

const REASON = "kind 'oldkind' is written for kind API version 0, no longer supported (what changed since: version 2: ...)";
const KINDS: JobKindInfo[] = [
  makeSaeKind(),
  { ...makeSaeKind(), name: "oldkind", description: "an old plug-in", api_version: 0, available: false, unavailable_reason: REASON },
];

function renderPicker(kind: string) {
  render(<JobIdentity kind={kind} kinds={KINDS} onKind={() => {}} name="" onName={() => {}} />);
  return screen.getByLabelText<HTMLSelectElement>("kind");
}

describe("the kind picker", () => {
  it("offers an available kind and shows a refused one disabled, with the server's reason", () => {
    const picker = renderPicker("sae");
    const options = [...picker.options];
    expect(options.map((o) => [o.value, o.textContent, o.disabled])).toEqual([
      ["sae", "sae", false],
      ["oldkind", "oldkind (unavailable)", true],
    ]);
    expect(options[1]).toHaveAttribute("title", REASON);
    expect(screen.getByText("sparse autoencoder")).toBeInTheDocument();
    expect(screen.queryByTestId("kind-unavailable")).toBeNull();
  });

  it("says why when the kind asked for is unavailable", () => {
    const picker = renderPicker("oldkind");
    expect(picker).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByTestId("kind-unavailable")).toHaveTextContent(`oldkind is unavailable: ${REASON}`);
    expect(screen.queryByText("an old plug-in")).toBeNull();
  });
});
