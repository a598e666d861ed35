import { afterEach, describe, expect, it, vi } from "vitest";
import { asWebSocket, FakeWebSocket } from "../test/fakeWebSocket";
import { api, ApiError, fieldErrors, fieldPath, gpuBusy, openSocket, setAuthToken, unwrap } from "./api";

afterEach(() => {
  setAuthToken(null);
  vi.unstubAllGlobals();
});

describe("client helpers", () => {
  it("names fields the way the form does", () => {
    expect(fieldPath(["body", "config", "d_in"])).toBe("config.d_in");
    expect(fieldPath(["body", "config", "dataset", "synthetic", "num_features"])).toBe("config.dataset.num_features");
    expect(fieldPath(["query", "limit"])).toBe("limit");
  });

  it("maps a 422 body to messages per field", () => {
    const body = {
      detail: [
        { loc: ["body", "config", "d_in"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal" },
        { loc: ["body", "count"], msg: "give exactly one of devices or count", type: "value_error" },
      ],
    };
    expect(fieldErrors(body)).toEqual({
      "config.d_in": "Input should be greater than or equal to 1",
      count: "give exactly one of devices or count",
    });
    expect(fieldErrors({ detail: "nope" })).toEqual({});
  });

  it("recognises a gpu_busy conflict", () => {
    const detail = {
      code: "gpu_busy",
      field: "devices",
      message: "devices busy",
      busy: [{ node: "n", uuid: "u", index: 0, held_by_job_id: 3, reason: "held_by_job" }],
    };
    expect(gpuBusy({ detail })?.busy[0]?.held_by_job_id).toBe(3);
    expect(gpuBusy({ detail: { code: "not_enough_devices", message: "x" } })).toBeNull();
  });

  it("throws ApiError with the API's message", async () => {
    const failed = Promise.resolve({
      error: { detail: { code: "job_not_found", field: "job_id", message: "job 9 does not exist" } },
      response: new Response(null, { status: 404 }),
    });
    await expect(unwrap(failed)).rejects.toMatchObject({ status: 404, message: "job 9 does not exist" });
    await expect(unwrap(failed)).rejects.toBeInstanceOf(ApiError);
  });

  it("adds a bearer token when one is set", async () => {
    const fetchMock = vi.fn(
      async (_request: Request) =>
        new Response(JSON.stringify({ status: "ok", version: "1" }), { status: 200, headers: { "Content-Type": "application/json" } }),
    );
    vi.stubGlobal("fetch", fetchMock);
    setAuthToken("secret");
    await api.GET("/api/health");
    const request = fetchMock.mock.calls[0]?.[0];
    expect(request?.headers.get("Authorization")).toBe("Bearer secret");
    const socket = openSocket("/ws/telemetry", asWebSocket) as unknown as FakeWebSocket & { protocols?: string[] };
    expect(socket.url).toMatch(/^ws:\/\/.*\/ws\/telemetry$/);
    expect(socket.protocols).toEqual(["gpudeck", "bearer.secret"]);
  });
});
