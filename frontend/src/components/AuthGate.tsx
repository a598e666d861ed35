import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type ReactNode } from "react";
import { api, ApiError, getAuthToken, onUnauthorized, setAuthToken, takeTokenFromUrl, unwrap } from "../client/api";
import type { User } from "../client/types";
import { SignIn } from "./SignIn";

export const EXPIRED = "Your session expired: the token was revoked or has run out. Sign in with a new one.";

/**
 * Shows the app to a signed-in user (or anyone, when the API runs without authentication).
 * A 401 after sign-in ends the session once: the token is dropped (so the requests still in
 * flight cannot start another round) and the sign-in form says why.
 */
export function AuthGate({ children }: { children: (user: User, signOut: () => void) => ReactNode }) {
  const client = useQueryClient();
  const [expired, setExpired] = useState(false);
  // a token kept from an earlier visit (sessionStorage) that the API refuses has expired too
  const [notice, setNotice] = useState<string | null>(() => (getAuthToken() !== null ? EXPIRED : null));
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/api/auth/me")), retry: false, staleTime: Infinity });

  useEffect(() => {
    const signInAgain = () => {
      setExpired(false);
      void client.resetQueries();
    };
    const dropSession = () => {
      // a wrong token typed into the form is that form's error, not an expired session
      if (getAuthToken() === null || client.getQueryState(["me"])?.status !== "success") return;
      setAuthToken(null);
      setExpired(true);
      void client.cancelQueries();
    };
    const onHash = () => {
      const token = takeTokenFromUrl();
      if (token) {
        setAuthToken(token);
        signInAgain();
      }
    };
    window.addEventListener("hashchange", onHash);
    const unsubscribe = onUnauthorized(dropSession);
    return () => {
      window.removeEventListener("hashchange", onHash);
      unsubscribe();
    };
  }, [client]);

  const onSignedIn = () => {
    setExpired(false);
    void client.resetQueries();
  };
  if (expired) return <SignIn notice={EXPIRED} onSignedIn={onSignedIn} />;
  if (me.isPending) return <div className="page muted">Connecting…</div>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) return <SignIn notice={notice} onSignedIn={onSignedIn} />;
    return <div className="page banner error">The API did not answer: {me.error.message}</div>;
  }
  const signOut = () => {
    setAuthToken(null);
    setNotice(null);
    void client.resetQueries();
  };
  return <>{children(me.data, signOut)}</>;
}
