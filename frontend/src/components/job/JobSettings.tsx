import { useState } from "react";
import { Link } from "react-router-dom";
import type { Schemas } from "../../client/types";
import { useJobSettings } from "../../hooks/useSettings";
import { settingExact, settingText } from "../../lib/settings/format";
import { SettingsDiff } from "./SettingsDiff";

type Setting = Schemas["SettingPublic"];
type SweepDifference = Schemas["SweepDifference"];

/** "lr 0.01 (base 0.004), k 3 (base 5)": a sweep member against its sweep's base config. */
function SweepDifferences({ sweepId, rows }: { sweepId: number; rows: SweepDifference[] }) {
  if (rows.length === 0) return null;
  return (
    <p data-testid="sweep-differences">
      Differs from <Link to={`/sweeps/${sweepId}`}>sweep #{sweepId}</Link>'s base in{" "}
      {rows.map((d, i) => (
        <span key={d.path}>
          {i > 0 && ", "}
          <span className="mono" title={`${settingExact(d.value)} (base ${settingExact(d.base)})`}>
            {d.path} {settingText(d.value)}
          </span>
          <span className="muted"> (base {settingText(d.base)})</span>
        </span>
      ))}
      .
    </p>
  );
}

/** The value, what it comes to ("0.05 → 75 steps"), and whether it is the kind's default. */
function SettingRow({ s }: { s: Setting }) {
  const mark = s.is_default ? "default" : s.has_default ? `default ${settingText(s.default)}` : "required";
  return (
    <tr data-testid="setting" data-path={s.path} className={s.is_default ? "muted" : "setting-changed"}>
      <td className="mono">{s.path}</td>
      <td className="mono" title={settingExact(s.value)}>
        {settingText(s.value)}
        {s.note && <span data-testid="setting-note"> → {s.note}</span>}
      </td>
      <td className="small" data-testid="setting-mark">
        {mark}
      </td>
    </tr>
  );
}

/** "Diff with job [ ]": this job's differing fields beside another's, on this page. */
function DiffWith({ jobId }: { jobId: number }) {
  const [typed, setTyped] = useState("");
  const [other, setOther] = useState<number | null>(null);
  const [problem, setProblem] = useState("");
  return (
    <div className="diff-with">
      <form
        className="small"
        onSubmit={(e) => {
          e.preventDefault();
          const n = Number(typed.trim().replace(/^#/, ""));
          const ok = typed.trim() !== "" && Number.isInteger(n) && n >= 1 && n !== jobId;
          setOther(ok ? n : null);
          setProblem(ok ? "" : n === jobId ? "that is this job: give another job's number" : "give another job's number, e.g. 12");
        }}
      >
        <label>
          diff with job #{" "}
          <input aria-label="job to diff with" inputMode="numeric" size={6} value={typed} onChange={(e) => setTyped(e.target.value)} />
        </label>{" "}
        <button type="submit">Diff</button>
        {problem && (
          <span className="field-error" role="alert">
            {" "}
            {problem}
          </span>
        )}
      </form>
      {other !== null && <SettingsDiff ids={[jobId, other]} />}
    </div>
  );
}

/**
 * The job's config as it runs: every field (nested ones by dots), what a share or an empty
 * field comes to, defaults marked and changed fields first to the eye; for a sweep member,
 * what it sets differently from its sweep's base. "Changed only" hides the defaults.
 */
export function JobSettings({ jobId }: { jobId: number }) {
  const settings = useJobSettings(jobId);
  const [changedOnly, setChangedOnly] = useState(false);
  const data = settings.data;
  if (settings.error) return <p className="banner error">Settings: {settings.error.message}</p>;
  if (!data) return null;
  const changed = data.settings.filter((s) => !s.is_default).length;
  const rows = changedOnly ? data.settings.filter((s) => !s.is_default) : data.settings;
  return (
    <section className="card" data-testid="job-settings">
      <div className="table-tools">
        <h2>Settings</h2>
        <label className="small">
          <input type="checkbox" checked={changedOnly} onChange={(e) => setChangedOnly(e.target.checked)} /> changed only ({changed} of{" "}
          {data.settings.length} fields differ from the {data.kind} defaults)
        </label>
      </div>
      {data.sweep_id != null && <SweepDifferences sweepId={data.sweep_id} rows={data.sweep_differences ?? []} />}
      <div className="table-scroll">
        <table className="settings-table">
          <thead>
            <tr>
              <th>field</th>
              <th>value</th>
              <th>default?</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((s) => (
              <SettingRow key={s.path} s={s} />
            ))}
          </tbody>
        </table>
      </div>
      <DiffWith jobId={jobId} />
    </section>
  );
}
