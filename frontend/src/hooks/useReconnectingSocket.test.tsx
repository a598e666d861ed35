import { act, renderHook } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { asWebSocket, FakeWebSocket } from "../test/fakeWebSocket";
import { backoffDelay, useReconnectingSocket } from "./useReconnectingSocket";

const options = { WebSocketImpl: asWebSocket, baseDelayMs: 100, maxDelayMs: 400 };

beforeEach(() => {
  FakeWebSocket.reset();
  vi.useFakeTimers();
  vi.spyOn(Math, "random").mockReturnValue(1); // the delay at its ceiling: base * 2^attempt
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** Advances the clock to just before, then to, the next reconnect; returns whether it came on time. */
function reconnectsAfter(ms: number): boolean {
  const before = FakeWebSocket.instances.length;
  act(() => vi.advanceTimersByTime(ms - 1));
  if (FakeWebSocket.instances.length !== before) return false;
  act(() => vi.advanceTimersByTime(1));
  return FakeWebSocket.instances.length === before + 1;
}

describe("useReconnectingSocket", () => {
  it("hands each text frame to the latest handler and reports the connection", () => {
    const first = vi.fn();
    const second = vi.fn();
    const { result, rerender } = renderHook(({ onMessage }) => useReconnectingSocket("/ws/x", onMessage, options), {
      initialProps: { onMessage: first },
    });
    const socket = FakeWebSocket.latest();
    expect(socket.url).toMatch(/\/ws\/x$/);
    expect(result.current.connection).toBe("connecting");
    act(() => socket.open());
    expect(result.current.connection).toBe("open");
    act(() => socket.receive({ n: 1 }));
    rerender({ onMessage: second });
    act(() => socket.receive({ n: 2 }));
    expect(first).toHaveBeenCalledExactlyOnceWith('{"n":1}');
    expect(second).toHaveBeenCalledExactlyOnceWith('{"n":2}');
    expect(FakeWebSocket.instances).toHaveLength(1); // a new handler does not reconnect
  });

  it("backs off exponentially up to the cap while connections fail", () => {
    const { result } = renderHook(() => useReconnectingSocket("/ws/x", () => {}, options));
    for (const [attempt, delay] of [100, 200, 400, 400].entries()) {
      act(() => FakeWebSocket.latest().drop());
      expect(result.current.connection).toBe("closed");
      expect(result.current.attempts).toBe(attempt + 1);
      expect(reconnectsAfter(delay)).toBe(true);
      expect(result.current.connection).toBe("connecting");
    }
  });

  it("starts again from the base delay after a connection that opened", () => {
    const { result } = renderHook(() => useReconnectingSocket("/ws/x", () => {}, options));
    act(() => FakeWebSocket.latest().drop());
    expect(reconnectsAfter(100)).toBe(true);
    act(() => FakeWebSocket.latest().drop());
    expect(reconnectsAfter(200)).toBe(true);
    act(() => FakeWebSocket.latest().open());
    expect(result.current.attempts).toBe(0);
    act(() => FakeWebSocket.latest().drop());
    expect(reconnectsAfter(100)).toBe(true);
  });

  it("closes on an error and reconnects", () => {
    renderHook(() => useReconnectingSocket("/ws/x", () => {}, options));
    const socket = FakeWebSocket.latest();
    act(() => socket.onerror?.(new Event("error")));
    expect(socket.readyState).toBe(FakeWebSocket.CLOSED);
    expect(reconnectsAfter(100)).toBe(true);
  });

  it("closes and stops reconnecting when the path becomes null or on unmount", () => {
    const { result, rerender, unmount } = renderHook(({ path }) => useReconnectingSocket(path, () => {}, options), {
      initialProps: { path: "/ws/x" as string | null },
    });
    const first = FakeWebSocket.latest();
    act(() => first.open());
    rerender({ path: null });
    expect(first.readyState).toBe(FakeWebSocket.CLOSED);
    expect(result.current.connection).toBe("closed");
    act(() => vi.advanceTimersByTime(5000));
    expect(FakeWebSocket.instances).toHaveLength(1);
    rerender({ path: "/ws/y" });
    const second = FakeWebSocket.latest();
    expect(second.url).toMatch(/\/ws\/y$/);
    unmount();
    expect(second.readyState).toBe(FakeWebSocket.CLOSED);
    act(() => vi.advanceTimersByTime(5000));
    expect(FakeWebSocket.instances).toHaveLength(2);
  });
});

describe("backoffDelay", () => {
  it("doubles up to the cap, with jitter in the upper half", () => {
    expect(backoffDelay(0, 500, 10000, () => 1)).toBe(500);
    expect(backoffDelay(3, 500, 10000, () => 1)).toBe(4000);
    expect(backoffDelay(10, 500, 10000, () => 1)).toBe(10000);
    expect(backoffDelay(10, 500, 10000, () => 0)).toBe(5000);
  });
});
