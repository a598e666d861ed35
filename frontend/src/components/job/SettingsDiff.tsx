import { Link } from "react-router-dom";
import { useJobsDiff } from "../../hooks/useSettings";
import { settingExact, settingText } from "../../lib/settings/format";

/**
 * The config fields where two or more jobs differ, one column per job in the order given
 * (GET /api/jobs/diff): what `gpudeck diff` prints. Fields every job sets alike are counted,
 * not listed; a job whose config lacks a field (another kind, another dataset type) shows
 * "not set".
 */
export function SettingsDiff({ ids }: { ids: number[] }) {
  const diff = useJobsDiff(ids);
  if (ids.length < 2) return <p className="muted">Pick two or more jobs to see where their settings differ.</p>;
  if (diff.error) return <p className="banner error">Settings: {diff.error.message}</p>;
  if (!diff.data) return <p className="muted">Reading settings…</p>;
  const { fields, job_ids: jobIds, kinds, same_count: same } = diff.data;
  const mixed = new Set(kinds).size > 1;
  return (
    <div data-testid="settings-diff">
      <p className="muted small" data-testid="settings-diff-summary">
        {fields.length === 0 ? "Same settings" : `${fields.length} field${fields.length === 1 ? "" : "s"} differ`}; {same} the same
        {mixed ? ` (kinds: ${kinds.join(", ")})` : ""}.
      </p>
      {fields.length > 0 && (
        <div className="table-scroll">
          <table className="settings-table">
            <thead>
              <tr>
                <th>field</th>
                {jobIds.map((id) => (
                  <th key={id}>
                    <Link to={`/jobs/${id}`}>#{id}</Link>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {fields.map((f) => (
                <tr key={f.path} data-testid="diff-field" data-path={f.path}>
                  <td className="mono">{f.path}</td>
                  {f.values.map((v, i) => (
                    <td key={jobIds[i]} className={f.present[i] ? "mono" : "muted"} title={f.present[i] ? settingExact(v) : "not set"}>
                      {f.present[i] ? settingText(v) : "not set"}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
