import type { DataChoice } from "../../client/types";
import { useChoices } from "../../hooks/queries";
import { formatBytes } from "../../lib/format";

const NO_CODE = "no .py file under the code roots, or none is configured (an admin sets GPUDECK_SCRIPT_CODE_ROOTS)";

/** Where the choices lie: "<data_dir>/models", or the code roots by name ("the code root /srv/code"). */
function placeOf(source: string, choices: DataChoice[]): string {
  if (source !== "code_roots") return `<data_dir>/${source}`;
  const roots = [...new Set(choices.flatMap((c) => (c.root ? [c.root] : [])))];
  return `the code root${roots.length === 1 ? "" : "s"} ${roots.join(", ")}`;
}

/** What one picks a data-directory item by: its detail, d_in and size on disk. */
export function describeChoice(choice: DataChoice): string {
  return [choice.detail, choice.d_in !== null ? `d_in ${choice.d_in}` : null, formatBytes(choice.size_bytes)].filter(Boolean).join(" · ");
}

/**
 * A text field's pick list (`x-choices`): the browser's list of what the data directory holds
 * under `source`, and a line saying what the typed value is, or that it is none of them (a
 * typo shows before the API refuses it).
 */
export function ChoiceList({ id, source, value, choices }: { id: string; source: string; value: string; choices?: DataChoice[] }) {
  if (choices === undefined) return null;
  const chosen = choices.find((c) => c.value === value);
  const where = placeOf(source, choices);
  const note =
    choices.length === 0
      ? source === "code_roots"
        ? NO_CODE
        : `nothing under ${where} yet`
      : chosen
        ? describeChoice(chosen)
        : value.trim() !== ""
          ? `not one of the ${choices.length} under ${where}: pick from the list`
          : `${choices.length} under ${where}: pick from the list`;
  return (
    <>
      <datalist id={id}>
        {choices.map((c) => (
          <option key={c.value} value={c.value}>
            {describeChoice(c)}
          </option>
        ))}
      </datalist>
      <span className={`field-choice small ${chosen || value.trim() === "" ? "muted" : "warn"}`} data-testid={`choice-${id}`}>
        {note}
      </span>
    </>
  );
}

/** The pick list of a field marked `x-choices: <source>`, read from GET /api/choices/{source}. */
export function PickList({ id, source, value }: { id: string; source: string; value: string }) {
  const choices = useChoices(source);
  return <ChoiceList id={id} source={source} value={value} choices={choices.data} />;
}
