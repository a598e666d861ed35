/**
 * Output as a terminal shows it: a carriage return (tqdm's progress bars, `print(..., end="\r")`)
 * goes back to the start of the line and what follows overwrites it, character by character.
 * "\r\n" is a plain line end.
 */
export function asTerminalShows(text: string): string {
  if (!text.includes("\r")) return text;
  return text
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => line.split("\r").reduce((shown, part) => part + shown.slice(part.length), ""))
    .join("\n");
}
