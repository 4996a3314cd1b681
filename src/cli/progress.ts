import type { RunEventBody } from "../core/events.ts";
import { describeRateLimit } from "../core/rate-limits.ts";
import type { StepKind } from "../core/records.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { type Io, truncate, WIDTH } from "./format.ts";
import { span, stepKindLabel } from "./waits.ts";

/** Options of {@link LiveProgress}. */
export interface LiveProgressOptions {
  /** Leave model text out (`--quiet`). @default false */
  quiet?: boolean;
  /** @default Date.now */
  now?: () => number;
  /** How often the elapsed time of a running step is looked at. @default 250 */
  tickMs?: number;
}

/** A step attempt running now. */
interface Running {
  label: string;
  attempt: number;
  startedAt: number;
  /** Seconds of running last said in a plain line (not a terminal). */
  said: number;
}

/** On a terminal, a running step gets its live elapsed line after this long. */
const STATUS_AFTER_MS = 1000;
/** Not on a terminal: a line saying a step still runs, every this many seconds. */
const STILL_RUNNING_S = 30;
const SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
/** Model text is indented under its step's lines. */
const INDENT = "    ";

/**
 * What `cairn run` and `cairn show --follow` print while a run goes (DESIGN §7b, "Logs and
 * progress"): each step attempt as it starts and ends (kind, name, attempt, duration), a retry
 * with its cause and the wait before the next attempt as soon as the attempt failed, and model
 * text as it streams, indented under its step. On a terminal, a step that runs longer than a
 * second gets a spinner with its elapsed time on a line that is redrawn, and cleared before
 * anything else is printed; elsewhere (a pipe, a file, CI) everything is plain lines, with a line
 * every 30 s for a step that still runs.
 *
 * Every other line of the command goes through {@link io}, so that it never lands in the middle
 * of streamed text or of the live line.
 */
export class LiveProgress {
  /** The command's output, kept apart from streamed text and the live line. */
  readonly io: Io;
  readonly #base: Io;
  readonly #quiet: boolean;
  readonly #now: () => number;
  readonly #tickMs: number;
  readonly #running = new Map<number, Running>();
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Streamed text not ended by a newline is on stdout (or held, for an Io that cannot write). */
  #partial = false;
  #held = "";
  /** The live line is drawn. */
  #status = false;
  #frame = 0;

  constructor(base: Io, options: LiveProgressOptions = {}) {
    this.#base = base;
    this.#quiet = options.quiet ?? false;
    this.#now = options.now ?? Date.now;
    this.#tickMs = options.tickMs ?? 250;
    this.io = {
      out: (line) => this.#line(line, "out"),
      err: (line) => this.#line(line, "err"),
      ...(base.write && { write: (text: string) => this.#raw(text) }),
      isTTY: base.isTTY === true,
    };
  }

  /**
   * Prints what `event` says (transitions are printed by the command itself); `startedAt`, the
   * start of a `step.start`'s attempt when it is known (read from the journal).
   */
  event(event: RunEventBody, startedAt = this.#now()): void {
    switch (event.type) {
      case "step.start":
        this.#started(event.seq, label(event), event.attempt, startedAt);
        return;
      case "step.end":
        this.#running.delete(event.seq);
        this.#line(
          event.status === "completed"
            ? `  ${label(event)}: attempt ${event.attempt} completed in ${span(event.durationMs)}`
            : `  ${label(event)}: attempt ${event.attempt} failed after ${span(event.durationMs)}: ${cause(event.error)}`,
        );
        return;
      case "step.retry":
        this.#line(
          `  ${label(event)}: attempt ${event.attempt + 1} in ${span(event.delayMs)}${event.paused ? " (the run pauses meanwhile)" : ""}, after: ${cause(event.error)}`,
        );
        return;
      case "step.rate_limited":
        this.#line(
          `  ${label(event)}: attempt ${event.attempt} waits ${span(event.waitMs)} for a slot of rate limit "${event.rateLimit}" (${describeRateLimit(event)})`,
        );
        return;
      case "model.text":
        if (!this.#quiet) this.#text(event.text);
        return;
      case "model.end":
        this.#endText();
        return;
      default:
        return;
    }
  }

  /** A step attempt began (from an event, or read from the journal by `show --follow`). */
  #started(seq: number, name: string, attempt: number, startedAt: number): void {
    this.#running.set(seq, { label: name, attempt, startedAt, said: 0 });
    this.#line(`  ${name}: attempt ${attempt} started`);
    if (!this.#timer) {
      this.#timer = setInterval(() => this.#tick(), this.#tickMs);
      this.#timer.unref?.();
    }
  }

  /** Ends streamed text and the live line, and stops the timer. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#running.clear();
    this.#clear();
  }

  #line(line = "", to: "out" | "err" = "out"): void {
    this.#clear();
    this.#base[to](line);
  }

  /** Ends the partial text line and wipes the live line, so that a line can be printed. */
  #clear(): void {
    if (this.#status) {
      this.#base.write?.("\r\x1b[2K");
      this.#status = false;
    }
    this.#endText();
  }

  #endText(): void {
    if (!this.#partial) return;
    this.#partial = false;
    if (this.#base.write) this.#base.write("\n");
    else this.#base.out(`${INDENT}${this.#held}`);
    this.#held = "";
  }

  #raw(text: string): void {
    if (this.#status) {
      this.#base.write?.("\r\x1b[2K");
      this.#status = false;
    }
    this.#base.write?.(text);
  }

  /** Model text, indented, as it streams (held until its newline when the Io writes lines only). */
  #text(text: string): void {
    if (this.#status) this.#raw("");
    text.split("\n").forEach((piece, i) => {
      if (i > 0) {
        this.#partial = true;
        this.#endText();
      }
      if (piece === "") return;
      if (!this.#base.write) this.#held += piece;
      else this.#base.write(this.#partial ? piece : `${INDENT}${piece}`);
      this.#partial = true;
    });
  }

  /** Redraws the live line (a terminal), or says a long step still runs (plain lines). */
  #tick(): void {
    const last = [...this.#running.values()].at(-1);
    if (!last) return;
    const ms = this.#now() - last.startedAt;
    if (this.#base.isTTY && this.#base.write) {
      // Streamed text is the progress while it comes: the live line waits for its end.
      if (this.#partial || ms < STATUS_AFTER_MS) return;
      this.#frame = (this.#frame + 1) % SPINNER.length;
      const line = `  ${SPINNER[this.#frame]} ${last.label}: attempt ${last.attempt} running ${span(ms)}`;
      this.#base.write(`\r\x1b[2K${truncate(line, WIDTH)}`);
      this.#status = true;
      return;
    }
    const s = Math.floor(ms / 1000);
    if (s >= last.said + STILL_RUNNING_S) {
      last.said = s - (s % STILL_RUNNING_S);
      this.#line(`  ${last.label}: attempt ${last.attempt} still running (${span(last.said * 1000)})`);
    }
  }
}

/**
 * Prints the live events of `runId` (step attempts, retries, model text) through `progress` until
 * the run settles or `signal` fires: what `cairn run` and `cairn resume` show of the run they drive.
 */
export async function printRunEvents(
  runtime: Runtime,
  runId: string,
  progress: LiveProgress,
  signal: AbortSignal,
): Promise<void> {
  try {
    for await (const event of runtime.events(runId, { signal })) progress.event(event);
  } catch {
    // The runtime closed under the stream (Ctrl-C): the transitions say what happened.
  }
}

/** How long the run's last live events are waited for once it settled. */
const STREAM_END_MS = 1000;

/** The end of `streamed` (`printRunEvents` of a run that settled), or a second at most. */
export function streamEnd(streamed: Promise<void>): Promise<unknown> {
  return Promise.race([streamed, new Promise((resolve) => setTimeout(resolve, STREAM_END_MS).unref())]);
}

/** `step 3 tool "search"`, `step 4 model call "default"`. */
export function stepLabel(step: { seq: number; kind: StepKind; name: string }): string {
  return `step ${step.seq} ${stepKindLabel(step.kind)} "${step.name}"`;
}

const label = stepLabel;

/** An error message on one line, cut to fit. */
function cause(error: string | undefined): string {
  return truncate((error ?? "unknown error").replace(/\s+/g, " "), WIDTH);
}
