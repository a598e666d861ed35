import { act, renderHook } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { asWebSocket, FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeSample } from "../test/fixtures";
import { useTelemetry } from "./useTelemetry";

const options = { WebSocketImpl: asWebSocket, baseDelayMs: 100, maxDelayMs: 1000, staleAfterMs: 3000, capacity: 60 };

beforeEach(() => {
  FakeWebSocket.reset();
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

describe("useTelemetry", () => {
  it("loads the snapshot, then each sample", () => {
    const { result } = renderHook(() => useTelemetry(options));
    const socket = FakeWebSocket.latest();
    expect(socket.url).toMatch(/\/ws\/telemetry\?history_s=600$/);
    expect(result.current.connection).toBe("connecting");
    act(() => {
      socket.open();
      socket.receive({ type: "snapshot", samples: [makeSample(0, [makeGpu()]), makeSample(1, [makeGpu()])] });
    });
    expect(result.current.connection).toBe("open");
    expect(result.current.store.series("node-a/SIM-0")?.t.size).toBe(2);
    act(() => socket.receive({ type: "sample", samples: [makeSample(2, [makeGpu({ utilization_gpu_pct: 99 })])] }));
    expect(result.current.store.devices()[0]?.utilization_gpu_pct).toBe(99);
    expect(result.current.store.series("node-a/SIM-0")?.t.size).toBe(3);
  });

  it("reconnects with growing delays and resets them after a good connection", () => {
    const random = vi.spyOn(Math, "random").mockReturnValue(1);
    renderHook(() => useTelemetry(options));
    act(() => FakeWebSocket.latest().drop());
    expect(FakeWebSocket.instances).toHaveLength(1);
    act(() => vi.advanceTimersByTime(100));
    expect(FakeWebSocket.instances).toHaveLength(2);
    act(() => FakeWebSocket.latest().drop());
    act(() => vi.advanceTimersByTime(199));
    expect(FakeWebSocket.instances).toHaveLength(2);
    act(() => vi.advanceTimersByTime(1));
    expect(FakeWebSocket.instances).toHaveLength(3);
    act(() => {
      FakeWebSocket.latest().open();
      FakeWebSocket.latest().drop();
    });
    act(() => vi.advanceTimersByTime(100));
    expect(FakeWebSocket.instances).toHaveLength(4);
    random.mockRestore();
  });

  it("shows the server's 'telemetry unavailable' while its store is down, then resumes samples", () => {
    const { result } = renderHook(() => useTelemetry(options));
    const socket = FakeWebSocket.latest();
    act(() => {
      socket.open();
      socket.receive({ type: "snapshot", samples: [makeSample(0, [makeGpu()])] });
    });
    expect(result.current.unavailable).toBeNull();
    act(() => socket.receive({ type: "unavailable", samples: [], message: "telemetry unavailable: redis unavailable" }));
    expect(result.current.unavailable).toBe("telemetry unavailable: redis unavailable");
    act(() => {
      socket.receive({ type: "available", samples: [] });
      socket.receive({ type: "sample", samples: [makeSample(1, [makeGpu({ utilization_gpu_pct: 42 })])] });
    });
    expect(result.current.unavailable).toBeNull();
    expect(result.current.store.devices()[0]?.utilization_gpu_pct).toBe(42);
  });

  it("says when the data is stale and when it is fresh again", () => {
    const { result } = renderHook(() => useTelemetry(options));
    const socket = FakeWebSocket.latest();
    act(() => {
      socket.open();
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu()])] });
    });
    expect(result.current.stale).toBe(false);
    act(() => vi.advanceTimersByTime(4000));
    expect(result.current.stale).toBe(true);
    act(() => socket.receive({ type: "sample", samples: [makeSample(4, [makeGpu()])] }));
    act(() => vi.advanceTimersByTime(1000));
    expect(result.current.stale).toBe(false);
  });

  it("keeps the history bounded however long it runs", () => {
    const { result } = renderHook(() => useTelemetry(options));
    const socket = FakeWebSocket.latest();
    act(() => {
      socket.open();
      for (let s = 0; s < 500; s += 1) socket.receive({ type: "sample", samples: [makeSample(s, [makeGpu()])] });
    });
    expect(result.current.store.series("node-a/SIM-0")?.t.size).toBe(60);
  });

  it("closes the socket and stops reconnecting on unmount", () => {
    const { unmount } = renderHook(() => useTelemetry(options));
    const socket = FakeWebSocket.latest();
    unmount();
    expect(socket.readyState).toBe(FakeWebSocket.CLOSED);
    act(() => vi.advanceTimersByTime(5000));
    expect(FakeWebSocket.instances).toHaveLength(1);
  });

  it("ignores frames it cannot read", () => {
    const { result } = renderHook(() => useTelemetry(options));
    const socket = FakeWebSocket.latest();
    act(() => {
      socket.open();
      socket.onmessage?.(new MessageEvent("message", { data: "not json" }));
      socket.receive({ type: "other" });
    });
    expect(result.current.store.devices()).toHaveLength(0);
  });
});
