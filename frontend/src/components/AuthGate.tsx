import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent, type ReactNode } from "react";
import { api, ApiError, getAuthToken, onUnauthorized, setAuthToken, unwrap } from "../client/api";
import type { User } from "../client/types";

function SignIn({ onSignedIn, rejected }: { onSignedIn: () => void; rejected: boolean }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(rejected ? "That token was not accepted." : null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setAuthToken(token.trim());
    try {
      await unwrap(api.POST("/api/auth/sign-in"));
      onSignedIn();
    } catch (e) {
      setAuthToken(null);
      setError(e instanceof ApiError && e.status === 401 ? "That token was not accepted." : String((e as Error).message));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="signin">
      <form className="card" onSubmit={submit}>
        <h1>
          <span className="logo" aria-hidden /> GPUDeck
        </h1>
        <p className="muted">Paste an API token to sign in. An admin creates one with <code>gpudeck users</code> or in the API.</p>
        <div className="field">
          <label htmlFor="token">API token</label>
          <input id="token" type="password" autoComplete="off" value={token} onChange={(e) => setToken(e.target.value)} placeholder="gpd_…" />
          {error && <span className="field-error" role="alert">{error}</span>}
        </div>
        <button type="submit" className="button primary wide" disabled={busy || token.trim() === ""}>
          Sign in
        </button>
      </form>
    </div>
  );
}

/** Shows the app to a signed-in user (or anyone, when the API runs without authentication). */
export function AuthGate({ children }: { children: (user: User, signOut: () => void) => ReactNode }) {
  const client = useQueryClient();
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/api/auth/me")), retry: false, staleTime: Infinity });
  useEffect(() => onUnauthorized(() => void client.invalidateQueries({ queryKey: ["me"] })), [client]);
  if (me.isPending) return <div className="page muted">Connecting…</div>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) {
      return <SignIn rejected={getAuthToken() !== null} onSignedIn={() => void client.resetQueries()} />;
    }
    return <div className="page banner error">The API did not answer: {me.error.message}</div>;
  }
  const signOut = () => {
    setAuthToken(null);
    client.clear();
    void client.invalidateQueries({ queryKey: ["me"] });
  };
  return <>{children(me.data, signOut)}</>;
}
