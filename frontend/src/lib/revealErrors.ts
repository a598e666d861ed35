/**
 * Which of the live estimate's messages the form shows. The estimate checks the config as it is
 * typed, so an untouched form already has messages ("give exactly one of entrypoint and module"
 * before anything is typed): a config field's message waits until that field is touched, a message
 * about the whole config (`config`) until a field it names is touched (or any field, when it
 * names none), and every message shows once the user tries to submit.
 */
export function revealedErrors(
  errors: Record<string, string>,
  touched: ReadonlySet<string>,
  attempted: boolean,
  /** the form's config paths ("entrypoint", "dataset.path"): what a message may name */
  paths: readonly string[],
): Record<string, string> {
  if (attempted) return errors;
  const shown = ([key, message]: [string, string]) => {
    // what the form's own choices make impossible (a count its node cannot place) shows at once
    if (key !== "config" && !key.startsWith("config.")) return true;
    return key === "config" ? wholeShown(message, touched, paths) : touched.has(key);
  };
  return Object.fromEntries(Object.entries(errors).filter(shown));
}

const lastName = (path: string) => path.split(".").pop() ?? path;
const names = (message: string, path: string) => new RegExp(`\\b${lastName(path)}\\b`).test(message);

function wholeShown(message: string, touched: ReadonlySet<string>, paths: readonly string[]): boolean {
  const named = paths.filter((path) => names(message, path));
  if (named.length === 0) return touched.size > 0;
  return named.some((path) => touched.has(`config.${path}`));
}
