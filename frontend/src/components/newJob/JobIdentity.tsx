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

/** The job's kind (any registered one, built in or installed with pip) and optional name. */
export function JobIdentity({ kind, kinds, onKind, name, onName, nameError }: Props) {
  // the chosen kind is offered even before the list is in (or if the list lacks it)
  const names = kinds?.some((k) => k.name === kind) ? kinds.map((k) => k.name) : [kind, ...(kinds ?? []).map((k) => k.name)];
  const description = kinds?.find((k) => k.name === kind)?.description;
  return (
    <div className="field-grid">
      <div className="field">
        <label htmlFor="f-kind">kind</label>
        <select id="f-kind" value={kind} onChange={(e) => onKind(e.target.value)}>
          {names.map((k) => (
            <option key={k}>{k}</option>
          ))}
        </select>
        {description && <span className="field-hint muted">{description}</span>}
      </div>
      <div className="field">
        <label htmlFor="f-name">name</label>
        <input id="f-name" value={name} placeholder="optional" onChange={(e) => onName(e.target.value)} />
        {nameError && <span className="field-error">{nameError}</span>}
      </div>
    </div>
  );
}
