import { useState, type FormEvent } from "react";
import { api, ApiError, setAuthToken, unwrap } from "../client/api";

/**
 * The token form. A refused token stays in the field with the API's reason under it, so a
 * typo can be fixed rather than pasted again.
 */
export function SignIn({ onSignedIn, notice }: { onSignedIn: () => void; notice: string | null }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(notice);
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
      setError(
        e instanceof ApiError && e.status === 401
          ? "That token was not accepted: it is wrong, revoked or expired."
          : String((e as Error).message),
      );
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
        <p className="muted">
          Paste an API token, or open the sign-in link <code>gpudeck run</code> prints. An admin makes a token with{" "}
          <code>gpudeck token create USER</code>, or a new user and their first token with <code>gpudeck user create NAME</code>.
        </p>
        <div className="field">
          <label htmlFor="token">API token</label>
          <input
            id="token"
            type="password"
            autoComplete="off"
            value={token}
            onChange={(e) => setToken(e.target.value)}
            placeholder="gpd_…"
          />
          {error && (
            <span className="field-error" role="alert" data-testid="signin-error">
              {error}
            </span>
          )}
        </div>
        <button type="submit" className="button primary wide" disabled={busy || token.trim() === ""}>
          Sign in
        </button>
      </form>
    </div>
  );
}
