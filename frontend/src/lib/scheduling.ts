/**
 * The scheduler as people read and type it: durations ("2h"), job id lists ("3, 4"), an
 * expected start ("in ~12 min"), and the new-job form's Scheduling fields and the body they make.
 */
import type { QueueReasonCode, SchedulingCreate } from "../client/types";
import type { FieldSpec } from "./schemaForm";

const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** "90s", "30m", "2h", "1d" or plain seconds -> seconds; the same words as `gpudeck submit --time-limit`. */
export function parseDuration(text: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(text.trim().toLowerCase());
  if (!match) throw new Error(`"${text}" is not a duration: use e.g. 90s, 30m, 2h or 1d`);
  const seconds = Number(match[1]) * (UNIT_S[match[2] || "s"] ?? 1);
  if (seconds < 1) throw new Error("a time limit is at least 1 second");
  return seconds;
}

/** "3, 4" or "3 4" -> [3, 4]. */
export function parseJobIds(text: string): number[] {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  const bad = parts.find((p) => !/^#?\d+$/.test(p) || Number(p.replace("#", "")) < 1);
  if (bad !== undefined) throw new Error(`"${bad}" is not a job id: list ids like 3, 4`);
  return parts.map((p) => Number(p.replace("#", "")));
}

/** An expected start relative to now: "now", "in ~12 min", "in ~3 h", "in ~2 d", or "unknown". */
export function formatExpectedStart(iso: string | null | undefined, now = Date.now(), fromTimeLimits = false): string {
  if (!iso) return "unknown";
  const seconds = (Date.parse(iso) - now) / 1000;
  if (!Number.isFinite(seconds)) return "unknown";
  if (seconds < 30) return "now";
  // A job ahead counted for its whole time limit (no measured rate yet): likely sooner.
  const word = fromTimeLimits ? "within" : "in";
  if (seconds < 5400) return `${word} ~${Math.max(1, Math.round(seconds / 60))} min`;
  if (seconds < 172800) return `${word} ~${Math.round(seconds / 3600)} h`;
  return `${word} ~${Math.round(seconds / 86400)} d`;
}

/** What the title of an expected start explains. */
export function expectedStartBasis(info: { expected_start_at?: string | null; expected_start_from_time_limits?: boolean }): string {
  if (!info.expected_start_at) return "no estimate: held, or waiting on another job";
  return info.expected_start_from_time_limits
    ? "a job ahead has no measured rate yet and is counted for its whole time limit: this job likely starts sooner"
    : "from the measured rates of the running jobs ahead and how long the waiting ones usually run";
}

/** A reason without the words its badge already says ("devices busy: vm/1 …" → "vm/1 …"). */
export function reasonDetail(info: { reason_code: QueueReasonCode; reason: string }): string {
  const label = `${REASON_LABELS[info.reason_code] ?? info.reason_code}: `;
  return info.reason.startsWith(label) ? info.reason.slice(label.length) : info.reason;
}

/** 7200 -> "2h", 90 -> "90s": a time limit as the form and CLI accept it. */
export function formatLimit(seconds: number): string {
  for (const [unit, size] of [
    ["d", 86400],
    ["h", 3600],
    ["m", 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/** Short words for a reason code (the API's `reason` says the details). */
export const REASON_LABELS: Record<QueueReasonCode, string> = {
  devices_busy: "devices busy",
  priority: "behind higher priority",
  quota: "over quota",
  dependency: "waiting on a dependency",
  held: "held",
  insufficient_memory: "insufficient memory",
  preempting: "preempting",
  sweep: "sweep's turn",
  cluster: "on the Slurm cluster",
};

/** The Scheduling section of the new-job form, as the schema form's field specs. */
export const SCHEDULING_FIELDS: FieldSpec[] = [
  {
    path: "scheduling.queue",
    apiName: "queue",
    label: "queue if busy",
    kind: "bool",
    default: true,
    hint: "unticked: refuse at once when the devices are busy",
  },
  {
    path: "scheduling.priority",
    apiName: "priority",
    label: "priority",
    kind: "int",
    default: "0",
    min: -100,
    max: 100,
    hint: "higher starts first; above 0 is for admins",
  },
  {
    path: "scheduling.time_limit",
    apiName: "time_limit_s",
    label: "time limit",
    kind: "text",
    default: "",
    optional: true,
    hint: "e.g. 90s, 30m, 2h, 1d; empty: the server's default",
  },
  {
    path: "scheduling.depends_on",
    apiName: "depends_on",
    label: "depends on",
    kind: "text",
    default: "",
    optional: true,
    hint: "job ids that must succeed first, e.g. 3, 4",
  },
  {
    path: "scheduling.preemptible",
    apiName: "preemptible",
    label: "preemptible",
    kind: "bool",
    default: false,
    hint: "may be stopped with a checkpoint for a higher-priority job, then resumed",
  },
  {
    path: "scheduling.hold",
    apiName: "hold",
    label: "submit held",
    kind: "bool",
    default: false,
    hint: "waits in the queue until released",
  },
];

/** The API's name for a scheduling field, so its 422 lands beside the right input. */
export const SCHEDULING_API_FIELDS: Record<string, string> = {
  queue: "scheduling.queue",
  priority: "scheduling.priority",
  time_limit_s: "scheduling.time_limit",
  depends_on: "scheduling.depends_on",
  preemptible: "scheduling.preemptible",
  hold: "scheduling.hold",
};

/** A scheduling field holds text or a checkbox (FieldValue's rows are for a kind's lists). */
export type SchedulingValues = Record<string, string | boolean>;

export function defaultSchedulingValues(): SchedulingValues {
  return Object.fromEntries(SCHEDULING_FIELDS.map((f) => [f.path, f.default as string | boolean]));
}

/**
 * The body's scheduling fields, and messages for what cannot be read. `queue` is always sent
 * (true unless "queue if busy" is unticked); the rest only when set, so the API's defaults hold.
 * A priority the browser cannot read as a number is sent as typed: the API's 422 says why.
 */
export function schedulingBody(values: SchedulingValues): { body: SchedulingCreate; errors: Record<string, string> } {
  const body: SchedulingCreate = { queue: values["scheduling.queue"] !== false };
  const errors: Record<string, string> = {};
  const priority = String(values["scheduling.priority"] ?? "").trim();
  if (priority !== "" && priority !== "0") body.priority = (Number.isFinite(Number(priority)) ? Number(priority) : priority) as number;
  const limit = String(values["scheduling.time_limit"] ?? "").trim();
  if (limit !== "") {
    try {
      body.time_limit_s = parseDuration(limit);
    } catch (e) {
      errors["scheduling.time_limit"] = (e as Error).message;
    }
  }
  const depends = String(values["scheduling.depends_on"] ?? "").trim();
  if (depends !== "") {
    try {
      body.depends_on = parseJobIds(depends);
    } catch (e) {
      errors["scheduling.depends_on"] = (e as Error).message;
    }
  }
  if (values["scheduling.preemptible"] === true) body.preemptible = true;
  if (values["scheduling.hold"] === true) body.hold = true;
  return { body, errors };
}

/** Whether a 422's key belongs to the Scheduling section (which shows it beside its field). */
export function isSchedulingError(key: string): boolean {
  return Object.hasOwn(SCHEDULING_API_FIELDS, key.split(".")[0] ?? "");
}

/** A 422's keys ("time_limit_s", "depends_on.0") moved onto the Scheduling fields' paths. */
export function schedulingErrors(errors: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, message] of Object.entries(errors)) {
    const field = isSchedulingError(key) ? SCHEDULING_API_FIELDS[key.split(".")[0] ?? ""] : undefined;
    if (field) out[field] = out[field] ? `${out[field]}; ${message}` : message;
  }
  return out;
}
