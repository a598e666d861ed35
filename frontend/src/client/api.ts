/**
 * The one HTTP client: openapi-fetch over the generated schema, plus a middleware that adds a
 * bearer token once authentication exists (setAuthToken keeps it in memory only).
 */
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./schema";
import type { GpuBusyDetail, ValidationIssue } from "./types";

// The token lives in memory; a copy in sessionStorage keeps a reload signed in, and goes when
// the tab closes. Nothing else is stored.
const TOKEN_KEY = "gpudeck.token";
let authToken: string | null = takeTokenFromUrl() ?? readStoredToken();

/**
 * `gpudeck run` prints a sign-in link `http://host/#token=...`: the fragment never reaches a
 * server; take the token from it and remove it from the address bar and history. Called at
 * load and again on `hashchange` (the link pasted into a tab that is already open).
 */
export function takeTokenFromUrl(): string | null {
  if (typeof window === "undefined" || !window.location.hash.includes("token=")) return null;
  const params = new URLSearchParams(window.location.hash.slice(1));
  const token = params.get("token");
  params.delete("token");
  const rest = params.toString();
  window.history.replaceState(null, "", `${window.location.pathname}${window.location.search}${rest ? `#${rest}` : ""}`);
  if (token) {
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch {
      /* memory is enough */
    }
  }
  return token;
}

function readStoredToken(): string | null {
  try {
    return typeof sessionStorage !== "undefined" ? sessionStorage.getItem(TOKEN_KEY) : null;
  } catch {
    return null;
  }
}

export function setAuthToken(token: string | null): void {
  authToken = token;
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage may be off; memory is enough */
  }
}

export function getAuthToken(): string | null {
  return authToken;
}

const unauthorizedListeners = new Set<() => void>();

/** Called whenever the API answers 401: the token is missing, wrong or revoked. */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

const authMiddleware: Middleware = {
  onRequest({ request }) {
    if (authToken) request.headers.set("Authorization", `Bearer ${authToken}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) for (const listener of unauthorizedListeners) listener();
    return response;
  },
};

function origin(): string {
  return typeof window !== "undefined" ? window.location.origin : "http://localhost";
}

// fetch is looked up per request, so tests (and later a service worker) can replace it.
export const api = createClient<paths>({ baseUrl: origin(), fetch: (request) => globalThis.fetch(request) });
api.use(authMiddleware);

/** ws(s)://host/path for the page's own origin; the dev server proxies /ws to the API. */
export function wsUrl(path: string): string {
  const url = new URL(path, origin());
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}

/**
 * Opens a WebSocket to `path`. A browser cannot set headers on one, so the token travels as the
 * `bearer.<token>` subprotocol next to `gpudeck` (the one the server picks), never in the URL.
 */
export function openSocket(path: string, Impl: typeof WebSocket = WebSocket): WebSocket {
  return authToken ? new Impl(wsUrl(path), ["gpudeck", `bearer.${authToken}`]) : new Impl(wsUrl(path));
}

/**
 * Saves the file at `url` (an API path) under `name`. A plain link cannot carry the bearer
 * token, so with one set the file is fetched with it and handed to the browser as a blob.
 */
export async function downloadFile(url: string, name: string): Promise<void> {
  const response = await globalThis.fetch(new URL(url, origin()), {
    headers: authToken ? { Authorization: `Bearer ${authToken}` } : {},
  });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const href = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = href;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/** A 403: the job is another user's, and this read is its owner's (and admins'). */
export function isForbidden(error: unknown): boolean {
  return error instanceof ApiError && error.status === 403;
}

/** A failed request, keeping the status and the API's body so pages can show the reason. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    super(describeError(status, body));
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

function describeError(status: number, body: unknown): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === "string") return detail;
  if (detail && typeof detail === "object" && "message" in detail) return String(detail.message);
  if (Array.isArray(detail) && detail.length > 0) {
    return detail.map((d: ValidationIssue) => `${fieldPath(d.loc)}: ${d.msg}`).join("; ");
  }
  return `request failed with HTTP ${status}`;
}

/** Turns openapi-fetch's {data, error, response} into data or a thrown ApiError (for react-query). */
export async function unwrap<T>(pending: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok || data === undefined) throw new ApiError(response.status, error ?? null);
  return data;
}

/** Like unwrap, for a text body that may be empty (openapi-fetch gives undefined for that). */
export async function unwrapText(pending: Promise<{ data?: string; error?: unknown; response: Response }>): Promise<string> {
  const { data, error, response } = await pending;
  if (!response.ok) throw new ApiError(response.status, error ?? null);
  return data ?? "";
}

/** FastAPI's `loc` without the leading "body"/"query": ["body","config","d_in"] -> "config.d_in". */
export function fieldPath(loc: readonly (string | number)[]): string {
  const rest = loc[0] === "body" || loc[0] === "query" || loc[0] === "path" ? loc.slice(1) : loc;
  // Pydantic names the chosen union member ("synthetic") in loc; the form does not.
  return rest.filter((part) => part !== "synthetic" && part !== "file").join(".");
}

/** 422 body -> { "config.d_in": "Input should be greater than or equal to 1" }. */
export function fieldErrors(body: unknown): Record<string, string> {
  const detail = (body as { detail?: unknown } | null)?.detail;
  const out: Record<string, string> = {};
  if (!Array.isArray(detail)) return out;
  for (const issue of detail as ValidationIssue[]) {
    const key = fieldPath(issue.loc);
    out[key] = out[key] ? `${out[key]}; ${issue.msg}` : issue.msg;
  }
  return out;
}

/** The 409 body's detail when devices were taken first, else null. */
export function gpuBusy(body: unknown): GpuBusyDetail | null {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (detail && typeof detail === "object" && (detail as { code?: unknown }).code === "gpu_busy") {
    return detail as GpuBusyDetail;
  }
  return null;
}
