import { isAbsolute, relative } from "node:path";
import { durationAgo, durationUntil } from "../core/durations.ts";
import type { Actor, Json, RunRecord, TransitionRecord } from "../core/records.ts";

/**
 * Text helpers of the CLI. Everything is laid out for a 100-column terminal: tables size their
 * columns to the content and wrap the last one under itself.
 */

/** Width the CLI lays its output out for. */
export const WIDTH = 100;

/** Where a command writes: one call per line. */
export interface Io {
  out(line?: string): void;
  err(line?: string): void;
  /** Writes `text` to stdout as it is (no newline added): streamed model text, a live status line. */
  write?(text: string): void;
  /** Whether stdout is a terminal: live status lines are drawn only then. */
  readonly isTTY?: boolean;
}

/**
 * The process's stdout and stderr. A closed pipe (`cairn show … | head`) is not an error: the
 * command carries on (a run it drives still finishes) and the lines are dropped.
 */
export const processIo: Io = {
  out: (line = "") => write(process.stdout, `${line}\n`),
  err: (line = "") => write(process.stderr, `${line}\n`),
  write: (text) => write(process.stdout, text),
  get isTTY() {
    return process.stdout.isTTY === true;
  },
};

const guarded = new WeakSet<NodeJS.WriteStream>();

function write(stream: NodeJS.WriteStream, text: string): void {
  if (!guarded.has(stream)) {
    guarded.add(stream);
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") throw error;
    });
  }
  if (!stream.destroyed) stream.write(text);
}

/** `PENDING → RUNNING`, with `·` for the first transition (which comes from nowhere). */
export function statePair(from: string | null, to: string): string {
  return `${from ?? "·"} → ${to}`;
}

/** `PAUSED (awaiting_user)`, or the state alone. */
export function stateLabel(run: Pick<RunRecord, "state" | "pausedReason">): string {
  return run.pausedReason ? `${run.state} (${run.pausedReason})` : run.state;
}

export function actorLabel(actor: Actor): string {
  return `${actor.kind} ${actor.id}`;
}

/** `14:03:07.412`, local time. */
export function clock(at: number): string {
  const d = new Date(at);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

/** `2026-07-01 14:03:07`, local time. */
export function dateTime(at: number): string {
  const d = new Date(at);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${clock(at).slice(0, 8)}`;
}

/** `4s ago`, `12m ago`, `3h ago`, `2d ago` (the wording of core/durations.ts). */
export function age(at: number, now = Date.now()): string {
  return durationAgo(Math.min(at, now), now);
}

/** `in 4s`, `in 12m`, `in 3h`, `in 2d`; `4s ago` once `at` has passed. */
export function until(at: number, now = Date.now()): string {
  return durationUntil(at, now);
}

/** `2026-07-01 14:03:07 (in 23h)`: a due time with how far off it is. */
export function due(at: number, now = Date.now()): string {
  return `${dateTime(at)} (${until(at, now)})`;
}

/**
 * `text` as one shell word (POSIX sh): as is when it needs no quoting, else in single quotes.
 * For the command lines the CLI prints for the user to copy.
 */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Pretty JSON, or `—` when there is no value. */
export function json(value: Json | undefined): string {
  return value === undefined ? "—" : JSON.stringify(value, null, 2);
}

/** One-line JSON cut to `max` characters. */
export function jsonLine(value: Json | undefined, max = WIDTH): string {
  return value === undefined ? "—" : truncate(JSON.stringify(value), max);
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** Splits `text` into lines of at most `width` characters, breaking at spaces where it can. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split("\n")) {
    let line = "";
    for (const word of paragraph.split(" ")) {
      if (line && line.length + 1 + word.length > width) {
        lines.push(line);
        line = "";
      }
      let rest = word;
      while (rest.length > width) {
        if (line) {
          lines.push(line);
          line = "";
        }
        lines.push(rest.slice(0, width));
        rest = rest.slice(width);
      }
      line = line ? `${line} ${rest}` : rest;
    }
    lines.push(line);
  }
  return lines;
}

/**
 * A table: columns as wide as their widest cell, two spaces apart, the last column wrapped to
 * what is left of {@link WIDTH} (at least 24 characters).
 */
export function table(header: string[], rows: string[][], indent = "  "): string[] {
  return tableBlocks(header, rows, indent).flat();
}

/** {@link table}, as one block of lines for the header and for each row. */
export function tableBlocks(header: string[], rows: string[][], indent = "  "): string[][] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const last = header.length - 1;
  const before = widths.slice(0, last).reduce((sum, w) => sum + w + 2, indent.length);
  const lastWidth = Math.max(24, WIDTH - before);
  return [header, ...rows].map((row) => {
    const cells = row.slice(0, last).map((cell, i) => cell.padEnd(widths[i] ?? 0));
    const tail = wrap(row[last] ?? "", lastWidth);
    return [
      `${indent}${[...cells, tail[0] ?? ""].join("  ")}`.trimEnd(),
      ...tail.slice(1).map((more) => `${" ".repeat(before)}${more}`),
    ];
  });
}

/**
 * One transition as `cairn run` and `cairn resume` print it while it happens:
 * `  #2  PENDING → RUNNING      worker vm:4711:ab12cd  claimed by worker vm:4711:ab12cd`
 * (`lead` replaces the two-space indent: `cairn worker` puts the time and the run id there). The
 * reason wraps under itself to fit {@link WIDTH}, or to `width` columns.
 */
export function transitionLine(t: TransitionRecord, lead = "  ", width = WIDTH): string[] {
  const head = `${lead}#${String(t.id).padEnd(3)} ${statePair(t.from, t.pausedReason ? `${t.to} (${t.pausedReason})` : t.to).padEnd(24)} ${actorLabel(t.actor).padEnd(24)} `;
  const reason = wrap(t.reason, Math.max(30, width - head.length));
  return [`${head}${reason[0] ?? ""}`.trimEnd(), ...reason.slice(1).map((l) => `${" ".repeat(head.length)}${l}`)];
}

/** `1502 ms`, or `—` for a step that has not ended. */
export function duration(startedAt: number, endedAt: number | null): string {
  return endedAt === null ? "—" : `${endedAt - startedAt} ms`;
}

function pad2(n: number): string {
  return String(n).padStart(2, "0");
}

/** A path relative to the current directory when it is inside it, else absolute. */
export function displayPath(path: string, cwd = process.cwd()): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}
