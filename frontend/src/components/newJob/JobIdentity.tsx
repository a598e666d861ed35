import type { JobKind, JobKindInfo } from "../../client/types";

interface Props {
  kind: JobKind;
  /** the registered kinds (GET /api/kinds); undefined while they load */
  kinds: JobKindInfo[] | undefined;
  onKind: (kind: JobKind) => void;
  name: string;
  onName: (name: string) => void;
  nameError?: string;
}

/** Why each kind the server refused (its kind API version) is unavailable, by name. */
function unavailableReasons(kinds: JobKindInfo[] | undefined): Map<string, string> {
  const refused = (kinds ?? []).filter((k) => !k.available);
  return new Map(refused.map((k) => [k.name, k.unavailable_reason ?? "refused by the server"]));
}

/**
 * The job's kind (any registered one, built in or installed with pip) and optional name. A kind the
 * server refused is listed but disabled, its reason as the option's title and, when it is the one
 * asked for (a link), under the picker.
 */
export function JobIdentity({ kind, kinds, onKind, name, onName, nameError }: Props) {
  // the chosen kind is offered even before the list is in (or if the list lacks it)
  const names = kinds?.some((k) => k.name === kind) ? kinds.map((k) => k.name) : [kind, ...(kinds ?? []).map((k) => k.name)];
  const description = kinds?.find((k) => k.name === kind)?.description;
  const unavailable = unavailableReasons(kinds);
  const chosenReason = unavailable.get(kind);
  return (
    <div className="field-grid">
      <div className="field">
        <label htmlFor="f-kind">kind</label>
        <select id="f-kind" value={kind} onChange={(e) => onKind(e.target.value)} aria-invalid={chosenReason !== undefined}>
          {names.map((k) => (
            <option key={k} value={k} disabled={unavailable.has(k)} title={unavailable.get(k)}>
              {unavailable.has(k) ? `${k} (unavailable)` : k}
            </option>
          ))}
        </select>
        {chosenReason !== undefined ? (
          <span className="field-error" data-testid="kind-unavailable">
            {kind} is unavailable: {chosenReason}
          </span>
        ) : (
          description && <span className="field-hint muted">{description}</span>
        )}
      </div>
      <div className="field">
        <label htmlFor="f-name">name</label>
        <input id="f-name" value={name} placeholder="optional" onChange={(e) => onName(e.target.value)} />
        {nameError && <span className="field-error">{nameError}</span>}
      </div>
    </div>
  );
}
