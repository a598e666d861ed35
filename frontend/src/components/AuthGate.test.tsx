import { QueryClient, QueryClientProvider, useQuery } from "@tanstack/react-query";
import { act, render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, getAuthToken, setAuthToken, unwrap } from "../client/api";
import { json } from "../test/render";
import { AuthGate, EXPIRED } from "./AuthGate";

afterEach(() => {
  setAuthToken(null);
  vi.unstubAllGlobals();
});

const refused = () => json({ detail: { code: "not_authenticated", field: null, message: "a valid API token is required" } }, 401);

/** Polls like the board does (fast, so a request storm would show within the test). */
function Board() {
  const gpus = useQuery({ queryKey: ["gpus"], queryFn: () => unwrap(api.GET("/api/gpus")), refetchInterval: 20 });
  return <div data-testid="app">{gpus.data ? "live" : "…"}</div>;
}

function renderGate(child: (name: string) => React.ReactNode = (name) => <div data-testid="app">hello {name}</div>) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <AuthGate>{(user) => child(user.name)}</AuthGate>
    </QueryClientProvider>,
  );
}

/** The API as seen with `valid` tokens; every request is recorded with its token. */
function stubAuth(valid: Set<string>) {
  const seen: { path: string; auth: string | null }[] = [];
  vi.stubGlobal("fetch", async (request: Request) => {
    const auth = request.headers.get("Authorization");
    seen.push({ path: new URL(request.url).pathname, auth });
    if (!auth || !valid.has(auth.replace("Bearer ", ""))) return refused();
    return new URL(request.url).pathname === "/api/gpus" ? json([]) : json({ id: 1, name: "ana", role: "user" });
  });
  return seen;
}

describe("AuthGate", () => {
  it("lets anyone in when the API runs without authentication", async () => {
    vi.stubGlobal("fetch", async () => json({ id: null, name: "local", role: "admin" }));
    renderGate();
    expect(await screen.findByTestId("app")).toHaveTextContent("hello local");
  });

  it("keeps a refused token in the field with the reason, and signs in with a good one", async () => {
    const seen = stubAuth(new Set(["gpd_good"]));
    renderGate();
    const input = await screen.findByLabelText("API token");
    await userEvent.type(input, "gpd_bad");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("not accepted");
    expect(screen.getByLabelText("API token")).toHaveValue("gpd_bad");
    await userEvent.clear(input);
    await userEvent.type(input, "gpd_good");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByTestId("app")).toHaveTextContent("hello ana");
    expect(seen.at(-1)?.auth).toBe("Bearer gpd_good");
  });

  it("names the CLI commands that make tokens", async () => {
    stubAuth(new Set());
    renderGate();
    await screen.findByLabelText("API token");
    expect(screen.getByText("gpudeck token create USER")).toBeInTheDocument();
    expect(screen.getByText("gpudeck user create NAME")).toBeInTheDocument();
  });

  it("signs in when a #token= link is pasted into the open tab", async () => {
    stubAuth(new Set(["gpd_link"]));
    renderGate();
    await screen.findByLabelText("API token");
    act(() => {
      window.location.hash = "#token=gpd_link";
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    });
    expect(await screen.findByTestId("app")).toHaveTextContent("hello ana");
    expect(window.location.hash).toBe("");
  });

  it("after the token is revoked, stops asking within a few requests and says the session expired", async () => {
    const valid = new Set(["gpd_soon_revoked"]);
    setAuthToken("gpd_soon_revoked");
    const seen = stubAuth(valid);
    renderGate(() => <Board />);
    await waitFor(() => expect(screen.getByTestId("app")).toHaveTextContent("live"));
    valid.clear();
    const before = seen.length;
    expect(await screen.findByRole("alert")).toHaveTextContent(EXPIRED);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // the 401 that ended the session, and perhaps one poll already in flight: nothing more
    expect(seen.length - before).toBeLessThanOrEqual(3);
    expect(getAuthToken()).toBeNull();
    expect(screen.queryByTestId("app")).toBeNull();
  });
});
