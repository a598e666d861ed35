import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactElement } from "react";
import { MemoryRouter, Route, Routes } from "react-router-dom";
import { TelemetryProvider } from "../hooks/TelemetryContext";
import { asWebSocket } from "./fakeWebSocket";

/** Renders `element` at `path` with a fresh query client and a fake telemetry socket. */
export function renderPage(element: ReactElement, { path = "/", route = "/" }: { path?: string; route?: string } = {}) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  const result = render(
    <QueryClientProvider client={client}>
      <TelemetryProvider options={{ WebSocketImpl: asWebSocket }}>
        <MemoryRouter initialEntries={[route]}>
          <Routes>
            <Route path={path} element={element} />
            <Route path="*" element={<div data-testid="elsewhere" />} />
          </Routes>
        </MemoryRouter>
      </TelemetryProvider>
    </QueryClientProvider>,
  );
  return { ...result, client };
}

export type Handler = (request: Request) => Response | Promise<Response>;

/** A fetch stub answering by "METHOD /path"; unknown routes get 404. Records every request. */
export function stubApi(routes: Record<string, Handler>) {
  const requests: { method: string; path: string; body: unknown }[] = [];
  const fetchMock = async (input: Request | string, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    const text = request.method === "GET" ? "" : await request.clone().text();
    requests.push({ method: request.method, path: url.pathname, body: text ? JSON.parse(text) : null });
    const handler = routes[`${request.method} ${url.pathname}`];
    return handler ? handler(request) : json({ detail: "not found" }, 404);
  };
  return { fetchMock, requests };
}

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}
