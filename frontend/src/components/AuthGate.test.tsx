import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { setAuthToken } from "../client/api";
import { json } from "../test/render";
import { AuthGate } from "./AuthGate";

afterEach(() => {
  setAuthToken(null);
  vi.unstubAllGlobals();
});

function renderGate() {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <AuthGate>{(user) => <div data-testid="app">hello {user.name}</div>}</AuthGate>
    </QueryClientProvider>,
  );
}

describe("AuthGate", () => {
  it("lets anyone in when the API runs without authentication", async () => {
    vi.stubGlobal("fetch", async () => json({ id: null, name: "local", role: "admin" }));
    renderGate();
    expect(await screen.findByTestId("app")).toHaveTextContent("hello local");
  });

  it("asks for a token on 401 and sends it as a bearer token from then on", async () => {
    const seen: (string | null)[] = [];
    vi.stubGlobal("fetch", async (request: Request) => {
      const auth = request.headers.get("Authorization");
      seen.push(auth);
      return auth === "Bearer gpd_good" ? json({ id: 1, name: "ana", role: "user" }) : json({ detail: { code: "not_authenticated", field: null, message: "a valid API token is required" } }, 401);
    });
    renderGate();
    const input = await screen.findByLabelText("API token");
    await userEvent.type(input, "gpd_bad");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("not accepted");
    await userEvent.clear(input);
    await userEvent.type(input, "gpd_good");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByTestId("app")).toHaveTextContent("hello ana");
    expect(seen.at(-1)).toBe("Bearer gpd_good");
  });
});
