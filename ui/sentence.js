// Every kind of event as a sentence a person reads, never as JSON: the
// timeline's rows, the lines above each event of a provenance or a phase.
// The kinds and their fields are those of `events/src/kinds.rs` and
// `events/src/agent_memory.rs`; a kind this page does not know yet is
// still written out field by field, in words.

/** Characters of a sentence the lists show. */
const SENTENCE_CHARS = 280;
/** Characters of another event quoted inside a sentence. */
const QUOTE_CHARS = 70;
/** Characters of each field a tool was called with. */
const FIELD_CHARS = 60;

export const clip = (text, chars = SENTENCE_CHARS) => (text.length > chars ? `${text.slice(0, chars)}…` : text);

/** "2026-01-06 14:33:18" (UTC): a time on one line. */
export function when(ts) {
  if (!ts) return "";
  const date = new Date(ts);
  if (Number.isNaN(date.getTime())) return String(ts);
  return date.toISOString().slice(0, 19).replace("T", " ");
}

/** A short form of an id (a ULID's last characters tell ids apart). */
export const shortId = (id) => (id && id.length > 12 ? `…${id.slice(-8)}` : id || "?");

/** Snake case as words: `in_progress` → "in progress". */
export const words = (name) => String(name).replaceAll("_", " ");

/**
 * Any JSON value as plain text: strings as they are, lists with commas,
 * objects as `key=value` pairs. What a tool was called with, a field of an
 * unknown kind.
 */
export function plain(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value !== "object") return String(value);
  if (Array.isArray(value)) return value.map(plain).join(", ");
  return Object.entries(value)
    .map(([key, inner]) => (inner !== null && typeof inner === "object" ? `${key}=(${plain(inner)})` : `${key}=${plain(inner)}`))
    .join(" ");
}

const quoted = (text) => `“${clip(String(text).trim(), QUOTE_CHARS)}”`;
const plural = (count, one, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;
const seconds = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)}\u00a0s` : `${ms}\u00a0ms`);

const RESOLUTIONS = { a_wins: "A holds", b_wins: "B holds", both_valid: "both hold", merged: "merged into one" };
const STATUSES = { open: "open", in_progress: "in progress", blocked: "blocked", done: "done", cancelled: "cancelled" };

/**
 * What a tool was run with, as a command line: `$ cmd` when its arguments
 * hold one (`cmd`), `$ tool a b` for a list of words (`args`), else the
 * tool and its fields. The working directory is left out.
 */
export function commandLine(tool, args) {
  const isWords = (value) => Array.isArray(value) && value.every((word) => word === null || typeof word !== "object");
  // The fields but `skip`, each cut to FIELD_CHARS.
  const fields = (skip) => plain(Object.fromEntries(Object.entries(args)
    .filter(([key]) => !skip.includes(key))
    .map(([key, value]) => [key, clip(plain(value), FIELD_CHARS)])));
  const more = (text) => (text ? ` (${text})` : "");
  if (args && typeof args === "object" && !Array.isArray(args)) {
    if (typeof args.cmd === "string") return `$ ${args.cmd}${more(fields(["cmd", "cwd"]))}`;
    if (isWords(args.args)) return `$ ${tool} ${args.args.join(" ")}${more(fields(["args", "cwd"]))}`;
    const called = fields(["cwd"]);
    return called ? `${tool} ${called}` : tool;
  }
  if (isWords(args)) return `$ ${tool} ${args.join(" ")}`;
  const called = clip(plain(args), FIELD_CHARS);
  return called ? `${tool} ${called}` : tool;
}

/**
 * Each kind's sentence from its `data`. `ref(id)` names another event or
 * item (quoting it when the caller holds it), `entry` is the whole log
 * entry.
 */
const KINDS = {
  message_recorded: (data) => (data.role && data.role !== "assistant" ? `(${data.role}) ${data.text}` : data.text),
  tool_result_recorded: (data) => {
    const outcome = data.exit_code === undefined || data.exit_code === null ? "" : ` → exit ${data.exit_code}`;
    const took = data.duration_ms === undefined || data.duration_ms === null ? "" : `, ${seconds(data.duration_ms)}`;
    const failed = data.exit_code ? " (failed)" : "";
    return `${commandLine(data.tool, data.args)}${outcome}${took}${failed}`;
  },
  decision_made: (data, ref) =>
    `Decided ${data.title}: ${data.choice}` +
    (data.rationale ? `. Why: ${data.rationale}` : "") +
    (data.supersedes ? ` (replaces ${ref(data.supersedes)})` : ""),
  fact_asserted: (data) =>
    `${data.subject} ${words(data.predicate)} ${data.object}` +
    (data.confidence !== undefined && data.confidence < 1 ? ` (confidence ${data.confidence})` : "") +
    (data.valid_from ? `, from ${when(data.valid_from)}` : "") +
    (data.valid_to ? ` until ${when(data.valid_to)}` : ""),
  fact_retracted: (data) =>
    `No longer holds: ${data.subject} ${words(data.predicate)} ${data.object}` +
    (data.valid_to ? ` (since ${when(data.valid_to)})` : "") +
    (data.reason ? `. ${data.reason}` : ""),
  handoff_sent: (data) =>
    `Handed ${data.task} to ${data.to}` + (data.summary ? `: ${data.summary}` : "") +
    (data.constraints && data.constraints.length ? ` (${plural(data.constraints.length, "constraint")})` : ""),
  handoff_received: (data, ref, find) => {
    const pack = data.package;
    const sent = find(data.handoff_id);
    if (!pack && sent && sent.kind === "handoff_sent" && sent.data) return `Received ${sent.data.task} from ${data.from}`;
    if (!pack) return `Received ${data.from}'s handoff ${shortId(data.handoff_id)}`;
    const held = pack.bundle ? pack.bundle.items.length : 0;
    const items = held ? ` (with ${plural(held, "memory", "memories")} of ${data.from}'s)` : "";
    return `Received ${pack.task} from ${data.from}${items}` + (pack.summary ? `: ${pack.summary}` : "");
  },
  handoff_acknowledged: (data, ref, find) => {
    const sent = find(data.handoff_id);
    const what = sent && sent.kind === "handoff_sent" && sent.data ? `${sent.data.task} from ${sent.agent}` :
      `the handoff ${ref(data.handoff_id, "")}`.replace("  ", " ");
    return `Acknowledged ${what}` + (data.note ? `: ${data.note}` : "");
  },
  phase_started: (data) => `Started phase ${data.phase}` + (data.goal ? `: ${data.goal}` : ""),
  phase_completed: (data) => `Completed phase ${data.phase}` + (data.outcome ? `: ${data.outcome}` : ""),
  task_updated: (data) =>
    `Task ${data.task_id}` + (data.title ? ` (${data.title})` : "") +
    ` is ${STATUSES[data.status] || words(data.status)}` + (data.note ? `: ${data.note}` : ""),
  preference_set: (data) => `Set ${words(data.key)} to ${data.value}`,
  memory_archived: (data, ref) => `Archived ${ref(data.item_id)}` + (data.reason ? `: ${data.reason}` : ""),
  memory_forgotten: (data, ref) => `Forgot ${ref(data.item_id)}` + (data.reason ? `: ${data.reason}` : ""),
  memory_cited: (data, ref) => `Used ${ref(data.item_id)}`,
  memory_ignored: (data, ref) => `Was given ${ref(data.item_id)} and did not use it`,
  memories_merged: (data, ref) =>
    `Merged ${plural(data.merged.length, "near-duplicate")} into ${ref(data.survivor)}` +
    (data.similarity !== undefined && data.similarity !== null ? ` (similarity ${Number(data.similarity).toFixed(2)})` : ""),
  memory_decayed: (data, ref) => `${ref(data.item_id, "Memory")} decayed out of context (score ${Number(data.score).toFixed(2)})`,
  contradiction_detected: (data, ref) =>
    `Found a contradiction: ${data.reason} (A: ${ref(data.a)}; B: ${ref(data.b)}` +
    (data.rule ? `; by the ${words(data.rule)} check` : "") + ")",
  contradiction_resolved: (data, ref, find) => {
    // The contradiction, when the caller holds its `contradiction_detected`
    // (found by the contradiction's id): what it was, and the side kept.
    const detected = find(data.contradiction_id);
    const sides = detected && detected.kind === "contradiction_detected" ? detected.data : null;
    const what = sides ? `: ${clip(sides.reason, QUOTE_CHARS)}` : ` ${shortId(data.contradiction_id)}`;
    const kept = sides && data.resolution === "a_wins" ? ` (${ref(sides.a)})` :
      sides && data.resolution === "b_wins" ? ` (${ref(sides.b)})` : "";
    return `Resolved the contradiction${what} — ${RESOLUTIONS[data.resolution] || words(data.resolution)}${kept}` +
      (data.note ? `; note: ${data.note}` : "");
  },
  phase_compressed: (data, ref) =>
    `Compressed the phase ${ref(data.phase_id, "")} with ${data.compressor}`.replace("  ", " ") + (data.index ? `: ${data.index}` : ""),
  memories_retrieved: (data) => {
    const times = data.counts.reduce((sum, count) => sum + count.count, 0);
    return `Queries returned ${plural(data.counts.length, "memory", "memories")}, ${plural(times, "time")} in all`;
  },
  memory_pinned: (data, ref) => `Pinned ${ref(data.item_id)}` + (data.reason ? `: ${data.reason}` : ""),
  memory_unpinned: (data, ref) => `Unpinned ${ref(data.item_id)}`,
  memories_linked: (data) => {
    const reasons = [...new Set(data.links.map((link) => link.reason))];
    return `Linked ${plural(data.links.length, "pair")} of memories: ${clip(reasons.join("; "), QUOTE_CHARS * 2)}`;
  },
  memory_purged: (data) => {
    const parts = [];
    if (data.item_ids && data.item_ids.length) parts.push(plural(data.item_ids.length, "memory", "memories"));
    if (data.before) parts.push(`every memory of ${data.of_agent || "this agent"} before ${when(data.before)}`);
    return `Purged ${parts.join(" and ")}` + (data.reason ? `: ${data.reason}` : "");
  },
  note_written: (data) => `Noted: ${data.text}` + (data.tags && data.tags.length ? ` [${data.tags.join(", ")}]` : ""),
  core_memory_updated: (data) =>
    data.content ? `Set core memory block ${data.block}: ${data.content}` : `Cleared core memory block ${data.block}`,
};

/** A kind this page does not know: its name and fields, in words. */
const unknownKind = (entry) => `${words(entry.kind || "event")}: ${plain(entry.data)}`;

/**
 * What a log entry says, in a sentence (`gist` of a row). `find(id)`
 * answers the entry of another event by id, when the caller holds it, so
 * that a sentence can quote what it refers to.
 */
export function sentence(entry, find = () => null) {
  if (entry.invalid) return `dead letter: ${entry.invalid}`;
  if (entry.erased_by) return `erased by purge ${entry.erased_by.map((purge) => `at seq ${purge.seq}`).join(", ")}`;
  // Another event or item, quoted when held, else named by `noun` and id.
  const ref = (id, noun = "memory") => {
    const target = find(id);
    if (target && target.kind && !target.invalid && target.kind in KINDS) {
      return quoted(KINDS[target.kind](target.data || {}, () => shortId(id), () => null));
    }
    return `${noun} ${shortId(id)}`;
  };
  const describe = KINDS[entry.kind];
  let text;
  try {
    text = describe ? describe(entry.data || {}, ref, find) : unknownKind(entry);
  } catch {
    // A payload without a field its kind requires (an older schema): the
    // fields as they are, still in words.
    text = unknownKind(entry);
  }
  return clip(text);
}
