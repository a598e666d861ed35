import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BrowserRouter, NavLink, Route, Routes } from "react-router-dom";
import type { User } from "./client/types";
import { AuthGate } from "./components/AuthGate";
import { ConnectionIndicator } from "./components/ConnectionIndicator";
import { TelemetryProvider, useTelemetryContext } from "./hooks/TelemetryContext";
import { Clusters } from "./pages/Clusters";
import { Compare } from "./pages/Compare";
import { Dashboard } from "./pages/Dashboard";
import { JobDetail } from "./pages/JobDetail";
import { Jobs } from "./pages/Jobs";
import { NewJob } from "./pages/NewJob";
import { Queue } from "./pages/Queue";
import { Sweep } from "./pages/Sweep";
import { Sweeps } from "./pages/Sweeps";

function Header({ user, signOut }: { user: User; signOut: () => void }) {
  const telemetry = useTelemetryContext();
  return (
    <header className="topbar">
      <NavLink to="/" className="brand">
        <span className="logo" aria-hidden />
        GPUDeck
      </NavLink>
      <nav>
        <NavLink to="/" end>
          GPUs
        </NavLink>
        <NavLink to="/jobs">Jobs</NavLink>
        <NavLink to="/queue">Queue</NavLink>
        <NavLink to="/sweeps">Sweeps</NavLink>
        <NavLink to="/clusters">Clusters</NavLink>
        <NavLink to="/new">New job</NavLink>
      </nav>
      <ConnectionIndicator telemetry={telemetry} />
      <span className="user muted small" title={user.role}>
        {user.name}
      </span>
      {user.id !== null && user.id !== undefined && (
        <button type="button" className="link-button small" onClick={signOut}>
          sign out
        </button>
      )}
    </header>
  );
}

function NotFound() {
  return <div className="page muted">Nothing here.</div>;
}

export function App({ client }: { client: QueryClient }) {
  return (
    <QueryClientProvider client={client}>
      <AuthGate>
        {(user, signOut) => (
          <TelemetryProvider key={user.id ?? "local"}>
            <BrowserRouter>
              <Header user={user} signOut={signOut} />
              <main>
                <Routes>
                  <Route path="/" element={<Dashboard />} />
                  <Route path="/jobs" element={<Jobs />} />
                  <Route path="/jobs/:id" element={<JobDetail />} />
                  <Route path="/compare" element={<Compare />} />
                  <Route path="/new" element={<NewJob />} />
                  <Route path="/queue" element={<Queue />} />
                  <Route path="/sweeps" element={<Sweeps />} />
                  <Route path="/sweeps/:id" element={<Sweep />} />
                  <Route path="/clusters" element={<Clusters />} />
                  <Route path="*" element={<NotFound />} />
                </Routes>
              </main>
            </BrowserRouter>
          </TelemetryProvider>
        )}
      </AuthGate>
    </QueryClientProvider>
  );
}
